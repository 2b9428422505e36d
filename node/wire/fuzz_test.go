package wire

import (
	"errors"
	"reflect"
	"testing"

	"cairn"
)

// A repair header is accepted only as a valid spec with its hop in range,
// and means the same after encoding it again (run 10 s in CI, .ci/run).
func FuzzDecodeRepairRequest(f *testing.F) {
	good, err := EncodeRepairRequest(RepairRequest{Spec: RepairSpec{Size: 10, Unit: 4,
		Hops:  []Hop{{Addr: "n1:1", Disk: "n1/d1", Shard: cairn.ShardName("0123456789abcdef0123456789abcdef", 0), Coeffs: []byte{1, 2}}},
		Store: []Target{{Addr: "n2:1", Disk: "n2/d1", Shard: cairn.ShardName("0123456789abcdef0123456789abcdef", 1)}, {Addr: "n3:1", Disk: "n3/d1", Shard: cairn.ShardName("0123456789abcdef0123456789abcdef", 2)}}},
		Hop: 0})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("e30")                 // {}
	f.Add("eyJob3AiOi0xfQ")      // {"hop":-1}
	f.Add("bnVsbA")              // null
	f.Add("W10")                 // []
	f.Add(good[:len(good)/2])    // cut
	f.Add(good + "eyJob3AiOjF9") // trailing
	f.Fuzz(func(t *testing.T, h string) {
		req, err := DecodeRepairRequest(h)
		if err != nil {
			if !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", h, err)
			}
			return
		}
		if err := req.Spec.Validate(); err != nil || req.Hop < 0 || req.Hop >= len(req.Spec.Hops) {
			t.Fatalf("%q accepted as %+v (%v)", h, req, err)
		}
		again, err := EncodeRepairRequest(req)
		if err != nil {
			t.Fatalf("%q accepted, but does not encode again: %v", h, err)
		}
		back, err := DecodeRepairRequest(again)
		if err != nil || !reflect.DeepEqual(back, req) {
			t.Fatalf("%q: %+v encodes to %q, which decodes to %+v (%v)", h, req, again, back, err)
		}
	})
}
