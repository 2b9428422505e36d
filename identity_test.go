package cairn_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"cairn"
)

const v1 = "0123456789abcdef0123456789abcdef"

func TestShardIdentityEncode(t *testing.T) {
	id := cairn.ShardIdentity{Bucket: "b", Key: "dir/ключ", Version: v1, Row: 5, Policy: "rs-4-2", BlockSize: 65536, PG: 7}
	b, err := id.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := id.Encode()
	if string(again) != string(b) {
		t.Fatal("encoding is not deterministic")
	}
	got, err := cairn.DecodeIdentity(b)
	if err != nil || got != id {
		t.Fatalf("decode: %+v %v, want %+v", got, err, id)
	}
	if id.Name() != v1+".5" {
		t.Fatalf("name %s", id.Name())
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x20
		if _, err := cairn.DecodeIdentity(c); !errors.Is(err, cairn.ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := cairn.DecodeIdentity(nil); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("empty: %v", err)
	}
}

func TestShardIdentityValidate(t *testing.T) {
	ok := cairn.ShardIdentity{Bucket: "b", Key: "k", Version: v1, Policy: "rs-4-2"}
	for _, c := range []struct {
		edit func(*cairn.ShardIdentity)
		want string
	}{
		{func(id *cairn.ShardIdentity) { id.Bucket = "" }, "must not be empty"},
		{func(id *cairn.ShardIdentity) { id.Key = "" }, "must not be empty"},
		{func(id *cairn.ShardIdentity) { id.Version = "xyz" }, "not 32 lower-case hex"},
		{func(id *cairn.ShardIdentity) { id.Row = cairn.MaxShardIndex + 1 }, "row 10000"},
		{func(id *cairn.ShardIdentity) { id.Part = 3 }, "a part names its upload"},
		{func(id *cairn.ShardIdentity) { id.Upload = v1 }, "a part names its upload"},
		{func(id *cairn.ShardIdentity) { id.Part, id.Upload = cairn.MaxParts+1, v1 }, "part 10001"},
		{func(id *cairn.ShardIdentity) { id.Key = strings.Repeat("k", cairn.MaxIdentityBytes) }, "more than 4096"},
	} {
		id := ok
		c.edit(&id)
		_, err := id.Encode()
		if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", id, err, c.want)
		}
	}
}

// TestIdentityOf: the identity derived from a committed manifest is the
// one its writer recorded, for an object and for a part (of a staged
// cold object too).
func TestIdentityOf(t *testing.T) {
	pv := "fedcba9876543210fedcba9876543210"
	m := &cairn.Manifest{Bucket: "b", Key: "k", Version: v1, Policy: "rs-4-2",
		Layout: cairn.Layout{Code: "rep-3", BlockSize: 100, PG: 4}}
	id, err := m.IdentityOf(0, 2)
	want := cairn.ShardIdentity{Bucket: "b", Key: "k", Version: v1, Row: 2, Policy: "rs-4-2", Code: "rep-3", BlockSize: 100, PG: 4}
	if err != nil || id != want {
		t.Fatalf("object: %+v %v", id, err)
	}
	// A staged cold object: its writer recorded the warm code as its
	// policy, which the manifest keeps as its Code.
	staged1 := *m
	staged1.Policy, staged1.Code = "clay-4-2-5/gp=1MiB:2", "rs-4-2"
	want = cairn.ShardIdentity{Bucket: "b", Key: "k", Version: v1, Row: 2, Policy: "rs-4-2", BlockSize: 100, PG: 4}
	if id, err = staged1.IdentityOf(0, 2); err != nil || id != want {
		t.Fatalf("staged object: %+v %v, want %+v", id, err, want)
	}
	mp := &cairn.Manifest{Bucket: "b", Key: "k", Version: v1, Policy: "rs-4-2", Upload: "u1",
		Parts: []cairn.Part{{Number: 3, Version: pv, Layout: cairn.Layout{BlockSize: 64, PG: 9}}}}
	id, err = mp.IdentityOf(3, 5)
	want = cairn.ShardIdentity{Bucket: "b", Key: "k", Version: pv, Part: 3, Upload: "u1", Row: 5, Policy: "rs-4-2", BlockSize: 64, PG: 9}
	if err != nil || id != want {
		t.Fatalf("part: %+v %v", id, err)
	}
	// A part of a staged cold object: UploadPart recorded the staging
	// policy, which the manifest keeps as its Code.
	staged := *mp
	staged.Policy, staged.Code = "clay-4-2-5/gp=1MiB:2", "rs-4-2"
	if id, err = staged.IdentityOf(3, 5); err != nil || id != want {
		t.Fatalf("part of a staged object: %+v %v, want %+v", id, err, want)
	}
	if _, err := mp.IdentityOf(4, 0); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("missing part: %v", err)
	}
}

func TestLayoutRefers(t *testing.T) {
	l := &cairn.Layout{Shards: []cairn.ShardLoc{
		{Disk: "n1/d1", Size: 10, CRC: 1},
		{Disk: "n2/d1", Size: 10, CRC: 2},
		{Disk: "n3/d1", Size: 10, CRC: 3, Row: 4}, // spare row 4 in slot 2
	}}
	id := func(row int) cairn.ShardIdentity {
		return cairn.ShardIdentity{Bucket: "b", Key: "k", Version: v1, Row: row}
	}
	for _, c := range []struct {
		what    string
		version string
		id      cairn.ShardIdentity
		disk    cairn.DiskID
		size    int64
		crc     uint32
		want    cairn.Reference
	}{
		{"named", v1, id(1), "n2/d1", 10, 2, cairn.Named},
		{"spare row named by its slot", v1, id(4), "n3/d1", 10, 3, cairn.Named},
		{"row 2 is not stored (the spare took its slot)", v1, id(2), "n3/d1", 10, 3, cairn.Unnamed},
		{"on another disk (moved by a repair)", v1, id(1), "n9/d9", 10, 2, cairn.Unnamed},
		{"another version (overwritten)", "ffffffffffffffffffffffffffffffff", id(1), "n2/d1", 10, 2, cairn.Unnamed},
		{"another CRC", v1, id(0), "n1/d1", 10, 7, cairn.Mismatch},
		{"another size", v1, id(0), "n1/d1", 11, 1, cairn.Mismatch},
	} {
		got, detail := l.Refers(c.version, c.id, c.disk, c.size, c.crc)
		if got != c.want || (got == cairn.Mismatch) != (detail != "") {
			t.Errorf("%s: %v %q, want %v", c.what, got, detail, c.want)
		}
	}
}

// TestLayoutRefersCoded: a fountain-coded block's identity names the
// object's version (Object), its stripe's (Version) and its block ID.
func TestLayoutRefersCoded(t *testing.T) {
	const stripe = "ffffffffffffffffffffffffffffffff"
	l := &cairn.Layout{BlockSize: 64, Coded: []cairn.CodedStripe{
		{Version: stripe, Blocks: []cairn.BlockLoc{{ID: 0, Disk: "n1/d1", CRC: 1}, {ID: 17, Disk: "n2/d1", CRC: 2}}},
		{Version: "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", BlockSize: 8, Blocks: []cairn.BlockLoc{{ID: 3, Disk: "n1/d1", CRC: 3}}},
	}}
	block := func(st string, b int) cairn.ShardIdentity {
		return cairn.ShardIdentity{Bucket: "b", Key: "k", Version: st, Row: b, Object: v1}
	}
	for _, c := range []struct {
		what    string
		version string
		id      cairn.ShardIdentity
		disk    cairn.DiskID
		size    int64
		crc     uint32
		want    cairn.Reference
	}{
		{"named", v1, block(stripe, 17), "n2/d1", 64, 2, cairn.Named},
		{"last stripe's smaller blocks", v1, block("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", 3), "n1/d1", 8, 3, cairn.Named},
		{"a block not kept", v1, block(stripe, 5), "n2/d1", 64, 2, cairn.Unnamed},
		{"another stripe", v1, block("dddddddddddddddddddddddddddddddd", 0), "n1/d1", 64, 1, cairn.Unnamed},
		{"another object version", "cccccccccccccccccccccccccccccccc", block(stripe, 0), "n1/d1", 64, 1, cairn.Unnamed},
		{"another CRC", v1, block(stripe, 0), "n1/d1", 64, 9, cairn.Mismatch},
	} {
		if got, detail := l.Refers(c.version, c.id, c.disk, c.size, c.crc); got != c.want || (got == cairn.Mismatch) != (detail != "") {
			t.Errorf("%s: %v %q, want %v", c.what, got, detail, c.want)
		}
	}
}

// A shard identity record (what a node stores from X-Cairn-Identity and
// reads back in a listing) is accepted only when it is valid, and means
// the same after encoding it again (run 10 s in CI, .ci/run).
func FuzzDecodeIdentity(f *testing.F) {
	good, err := cairn.ShardIdentity{Bucket: "b", Key: "k", Version: strings.Repeat("ab", 16), Row: 3, Part: 2, Upload: "u", Size: 10}.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-4]) // its JSON: the target adds the checksum
	f.Add([]byte{})
	f.Add([]byte(`{"bucket":"b","key":"k","version":"00000000000000000000000000000000","row":-1}`))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, raw []byte) {
		// As given, and with a right checksum so that the JSON is reached.
		sealed := binary.LittleEndian.AppendUint32(slices.Clip(raw), crc32.Checksum(raw, castagnoli))
		for _, b := range [][]byte{raw, sealed} {
			decodeIdentity(t, b)
		}
	})
}

// decodeIdentity checks what DecodeIdentity makes of b.
func decodeIdentity(t *testing.T, b []byte) {
	id, err := cairn.DecodeIdentity(b)
	if err != nil {
		if !errors.Is(err, cairn.ErrCorrupt) {
			t.Fatalf("%q: error %v is not ErrCorrupt", b, err)
		}
		return
	}
	if err := id.Validate(); err != nil {
		t.Fatalf("%q accepted as %+v: %v", b, id, err)
	}
	again, err := id.Encode()
	if err != nil {
		t.Fatalf("%q accepted as %+v, which does not encode: %v", b, id, err)
	}
	back, err := cairn.DecodeIdentity(again)
	if err != nil || back != id {
		t.Fatalf("%+v encodes to %q, which decodes to %+v (%v)", id, again, back, err)
	}
}
