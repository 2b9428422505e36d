package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"cairn"
)

// TestCut checks that cut returns exactly bytes [lo, hi) of its segments'
// concatenation, for every range, with empty segments among them.
func TestCut(t *testing.T) {
	segs := [][]byte{[]byte("abc"), nil, []byte("d"), []byte("efgh"), {}}
	all := bytes.Join(segs, nil)
	for lo := range int64(len(all)) + 1 {
		for hi := lo; hi <= int64(len(all))+2; hi++ {
			got := bytes.Join(cut(segs, lo, hi), nil)
			want := all[lo:min(hi, int64(len(all)))]
			if !bytes.Equal(got, want) {
				t.Errorf("cut(%d, %d) = %q, want %q", lo, hi, got, want)
			}
		}
	}
}

// failAfter accepts n bytes, then fails.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errWriter = errors.New("writer failed")

func (w *failAfter) Write(p []byte) (int, error) {
	k := min(len(p), w.n-w.got.Len())
	w.got.Write(p[:k])
	if k < len(p) {
		return k, errWriter
	}
	return k, nil
}

// TestGetWriteTo reads plain and encrypted objects, whole and by range,
// through io.Copy (the readers' WriteTo, as the S3 gateway does), and into
// a writer that fails midway: the bytes written are the object's, in
// order, and the writer's error comes back.
func TestGetWriteTo(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 2, "rs-4-2", Config{BlockSize: 4096, WindowBytes: 3 * 4096 * 4, Keys: testKeyring(t)})
	const size = 200_000 // several windows, a short last stripe
	data := randBytes(7, size)
	for _, sse := range []*SSE{nil, {Scheme: cairn.SSES3}} {
		key := "plain"
		if sse != nil {
			key = sse.Scheme
		}
		if _, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: size, SSE: sse}); err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]int64{{0, -1}, {1, size - 2}, {50_000, 70_001}, {size - 1, 1}} {
			_, rc, err := e.c.Get(ctx, "bkt", key, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rc.(io.WriterTo); !ok {
				t.Fatalf("%s: the reader %T has no WriteTo", key, rc)
			}
			var got bytes.Buffer
			n, err := io.Copy(&got, rc)
			rc.Close()
			want := data[r[0]:]
			if r[1] >= 0 {
				want = want[:r[1]]
			}
			if err != nil || n != int64(len(want)) || !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s %v: %d bytes (%d counted), err %v; want %d", key, r, got.Len(), n, err, len(want))
			}
		}
		_, rc, err := e.c.Get(ctx, "bkt", key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		w := &failAfter{n: 100_003}
		n, err := io.Copy(w, rc)
		rc.Close()
		if !errors.Is(err, errWriter) || n != int64(w.n) || !bytes.Equal(w.got.Bytes(), data[:w.n]) {
			t.Errorf("%s into a failing writer: %d bytes, err %v", key, n, err)
		}
	}
}
