package crypt_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"

	"cairn/crypt"
)

// A stream's ciphertext, and a ranged read that decrypts only the
// segments the range touches.
func Example() {
	dk, _ := crypt.NewDataKey(rand.Reader)
	sc, _ := crypt.NewStreamCipher(dk, crypt.Stream{Bucket: "photos", Key: "cat.jpg", Version: "0123456789abcdef0123456789abcdef"})
	plain := bytes.Repeat([]byte("meow "), 40000) // 200000 bytes: 4 segments
	ct, _ := io.ReadAll(crypt.NewEncrypter(sc, bytes.NewReader(plain)))
	fmt.Println(len(ct), "bytes of ciphertext")

	rg, _ := crypt.Range(131070, 131080, int64(len(plain)))
	fmt.Println("segments", rg.First, "to", (rg.CipherEnd-1)/(65536+16), "at ciphertext", rg.CipherOff, "to", rg.CipherEnd)
	got, _ := io.ReadAll(crypt.NewDecrypter(sc, bytes.NewReader(ct[rg.CipherOff:rg.CipherEnd]), rg))
	fmt.Printf("%q\n", got)
	// Output:
	// 200064 bytes of ciphertext
	// segments 1 to 2 at ciphertext 65552 to 196656
	// "meow meow "
}
