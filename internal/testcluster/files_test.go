package testcluster_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// writeFile writes size pseudo-random bytes (seeded) to dir/name and
// returns the path and the SHA-256.
func writeFile(t testing.TB, dir, name string, size int64, seed uint64) (string, [32]byte) {
	t.Helper()
	path, sum, err := makeFile(dir, name, size, seed)
	if err != nil {
		t.Fatal(err)
	}
	return path, sum
}

// makeFile is writeFile for goroutines other than the test's.
func makeFile(dir, name string, size int64, seed uint64) (string, [32]byte, error) {
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	rng := rand.New(rand.NewPCG(seed, uint64(size)))
	buf := make([]byte, 8)
	for left := size; left > 0; {
		x := rng.Uint64()
		for i := range buf {
			buf[i] = byte(x >> (8 * i))
		}
		n := min(left, 8)
		w.Write(buf[:n])
		left -= n
	}
	if err := w.Flush(); err != nil {
		return "", [32]byte{}, err
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return path, sum, nil
}

func fileSum(t testing.TB, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func sameFile(t testing.TB, a, b string) bool {
	t.Helper()
	x, y := fileSum(t, a), fileSum(t, b)
	return bytes.Equal(x[:], y[:])
}
