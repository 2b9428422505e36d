package cold

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn/meta"
)

// TestMaxChunksFitOneValue: the records of an object of DefaultMaxChunks
// chunks — its intent (a slot and a row per chunk) and its membership
// record — fit one metadata value, with the longest key and bucket name
// and 10-digit slot numbers, the worst case DefaultMaxChunks is sized for.
func TestMaxChunksFitOneValue(t *testing.T) {
	o := intentObject{Bucket: strings.Repeat("b", 63), Key: strings.Repeat("k", 1024), Version: strings.Repeat("f", 32),
		Disk: 99, Size: 1 << 40, Front: 1 << 40}
	var in intent
	for i := range DefaultMaxChunks {
		o.Slots = append(o.Slots, 4_000_000_000+uint32(i))
		in.Rows = append(in.Rows, [2]uint32{31, 4_000_000_000 + uint32(i)})
	}
	in.Objects = []intentObject{o}
	in.Pages = []int64{1 << 40}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	op, err := memberOp("f64cb247-0", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > meta.MaxColdValue || len(op.Value) > meta.MaxColdValue {
		t.Fatalf("intent %d bytes, membership record %d bytes; a value holds %d", len(b), len(op.Value), meta.MaxColdValue)
	}
	t.Logf("intent %d bytes, membership record %d bytes of %d", len(b), len(op.Value), meta.MaxColdValue)
}
