package crypt

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// BenchmarkStream: encrypting and decrypting a stream, the PUT and GET
// cost of SSE (compare with the codecs' Encode rates).
func BenchmarkStream(b *testing.B) {
	c := testStream(b, "v1")
	for _, size := range []int{64 << 10, 16 << 20} {
		p := plaintext(size)
		ct := encrypt(b, c, p)
		b.Run(fmt.Sprintf("Encrypt/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.Copy(io.Discard, NewEncrypter(c, bytes.NewReader(p))); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("Decrypt/%dKiB", size>>10), func(b *testing.B) {
			rg, _ := Range(0, int64(size), int64(size))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.Copy(io.Discard, NewDecrypter(c, bytes.NewReader(ct), rg)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
