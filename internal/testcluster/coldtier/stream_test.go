package coldtier_test

import (
	"bytes"
	"io"
	"testing"

	"cairn/internal/testcluster/coldtier"
)

// TestStream: a stream is the same bytes however it is read — whole, in
// odd-sized reads, or from a seek — and another seed gives other bytes.
func TestStream(t *testing.T) {
	const n = 200<<10 + 17
	whole, err := io.ReadAll(coldtier.Stream(7, n))
	if err != nil || len(whole) != n {
		t.Fatalf("%d bytes, %v", len(whole), err)
	}
	var odd bytes.Buffer
	r := coldtier.Stream(7, n)
	buf := make([]byte, 1000)
	for {
		k, err := r.Read(buf[:1+odd.Len()%999])
		odd.Write(buf[:k])
		if err == io.EOF {
			break
		}
	}
	if !bytes.Equal(odd.Bytes(), whole) {
		t.Fatal("odd-sized reads differ")
	}
	for _, off := range []int64{0, 1, 64<<10 - 1, 64 << 10, 150000, n} {
		r := coldtier.Stream(7, n)
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(r)
		if !bytes.Equal(rest, whole[off:]) {
			t.Fatalf("after a seek to %d: differ", off)
		}
		if got := coldtier.Sum(7, n, off, int64(len(rest))); got != coldtier.Sum(7, n, off, n-off) {
			t.Fatal("Sum differs")
		}
	}
	if _, err := coldtier.Stream(7, n).Seek(n+1, io.SeekStart); err == nil {
		t.Fatal("seek past the end accepted")
	}
	other, _ := io.ReadAll(coldtier.Stream(8, n))
	if bytes.Equal(other, whole) {
		t.Fatal("seeds 7 and 8 give the same bytes")
	}
}
