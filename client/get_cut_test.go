package client

import (
	"bytes"
	"testing"
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
