package gp

import (
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"cairn/internal/golden"
)

func testPG(t *testing.T, s0, max int64) *PG {
	t.Helper()
	g, err := NewGeometry(s0, 2, max)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := NewPG(4, 2, g)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

func sums(pg *PG, r Record) []uint32 {
	p := pg.Geo.Partition(r.Size)
	n := p.NumChunks()
	if p.Front > 0 {
		n++
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = crc32.Checksum([]byte(fmt.Sprint(r.Size, i)), crc32.MakeTable(crc32.Castagnoli))
	}
	return out
}

// TestPlacementGolden places, releases and re-places objects in a 4+2
// group (s0 = 1 MiB, q = 2, cap 8 MiB) and prints each record, its
// encoding, its pieces and the buckets: least-used disk choice, slot
// reuse, the front's offsets.
func TestPlacementGolden(t *testing.T) {
	pg := testPG(t, 1<<20, 8<<20)
	var b strings.Builder
	recs := map[string]Record{}
	place := func(name string, size int64) {
		r, err := pg.Place(pg.Geo.Partition(size))
		if err != nil {
			t.Fatal(err)
		}
		r.Sums = sums(pg, r)
		enc, err := r.AppendBinary(nil, pg.Geo)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(enc, pg.Geo)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(r) {
			t.Fatalf("%s: round trip %+v → %+v, %v", name, r, back, err)
		}
		recs[name] = r
		fmt.Fprintf(&b, "place %s size=%d → disk %d front@%d slots %v\n  record %d bytes %s\n", name, size, r.Disk, r.Front, r.Slots, len(enc), hex.EncodeToString(enc))
		locs, err := pg.Pieces(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locs {
			fmt.Fprintf(&b, "  piece %s [%d, +%d)\n", l.File, l.Offset, l.Length)
		}
	}
	release := func(name string) {
		if err := pg.Release(recs[name]); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "release %s\n", name)
	}
	state := func() {
		for i, d := range pg.Disks {
			fmt.Fprintf(&b, "  disk %d used=%d small=%d (free %d) buckets:", i, d.Used, d.SmallEnd, d.SmallFree)
			for _, bk := range d.Buckets {
				fmt.Fprintf(&b, " %d/%v", bk.Next, bk.Free)
			}
			b.WriteString("\n")
		}
	}
	place("a", 73<<20+1<<19)
	place("b", 3<<20)
	place("c", 1<<20)
	place("d", 0)
	place("e", 40<<20)
	state()
	release("a")
	release("c")
	state()
	place("f", 20<<20+7)
	place("g", 64<<20)
	state()
	golden.Check(t, "placement.txt", b.String())
}

// TestPlacementRandom places and releases random objects and checks that
// no slot is ever held by two objects, that every released slot is reused
// before a bucket grows, and that each object's pieces are on one disk.
func TestPlacementRandom(t *testing.T) {
	rng := testRand(t, 2)
	pg := testPG(t, 1<<20, 16<<20)
	type key struct {
		disk, level int
		slot        uint32
	}
	owner := map[key]int{}
	live := map[int]Record{}
	for id := range 3000 {
		if len(live) > 0 && rng.IntN(3) == 0 {
			for victim, r := range live {
				if err := pg.Release(r); err != nil {
					t.Fatal(err)
				}
				locs, _ := pg.Pieces(r)
				for _, l := range locs {
					if l.File != SmallFile {
						delete(owner, key{l.Disk, pg.Geo.Level(l.Length), uint32(l.Offset / l.Length)})
					}
				}
				delete(live, victim)
				break
			}
		}
		before := slices.Clone(pg.Disks[pg.LeastUsed()].Buckets)
		r, err := pg.Place(pg.Geo.Partition(rng.Int64N(100 << 20)))
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range pg.Disks[r.Disk].Buckets {
			if b.Next > before[i].Next && len(before[i].Free) > 0 && len(b.Free) > 0 {
				t.Fatalf("object %d: level %d grew from %d to %d slots with free slots %v left", id, i, before[i].Next, b.Next, b.Free)
			}
		}
		locs, err := pg.Pieces(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locs {
			if l.Disk != r.Disk {
				t.Fatalf("object %d: piece on disk %d, record says %d", id, l.Disk, r.Disk)
			}
			if l.File == SmallFile {
				continue
			}
			k := key{l.Disk, pg.Geo.Level(l.Length), uint32(l.Offset / l.Length)}
			if o, taken := owner[k]; taken {
				t.Fatalf("object %d got slot %+v of object %d", id, k, o)
			}
			owner[k] = id
		}
		live[id] = r
	}
	for d, disk := range pg.Disks {
		for i, b := range disk.Buckets {
			n := 0
			for k := range owner {
				if k.disk == d && k.level == i {
					n++
				}
			}
			if b.Used() != n {
				t.Fatalf("disk %d level %d: bucket says %d used, objects hold %d", d, i, b.Used(), n)
			}
		}
	}
}

func TestBucketRelease(t *testing.T) {
	var b Bucket
	for range 3 {
		if _, err := b.Claim(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Release(1); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(1); !errors.Is(err, ErrPlacement) {
		t.Fatalf("double release: %v", err)
	}
	if err := b.Release(3); !errors.Is(err, ErrPlacement) {
		t.Fatalf("release of a slot never claimed: %v", err)
	}
	if s, _ := b.Claim(); s != 1 {
		t.Fatalf("claim after release got %d, want the freed 1", s)
	}
	if s, _ := b.Claim(); s != 3 {
		t.Fatalf("claim got %d, want 3", s)
	}
	full := Bucket{Next: MaxSlots}
	if _, err := full.Claim(); !errors.Is(err, ErrFull) {
		t.Fatalf("full bucket: %v", err)
	}
}

func TestStripe(t *testing.T) {
	pg := testPG(t, 1<<20, 0)
	got := fmt.Sprint(pg.Stripe(2, 5))
	want := "[{0 gp/L02.data 20971520 4194304} {1 gp/L02.data 20971520 4194304} {2 gp/L02.data 20971520 4194304} {3 gp/L02.data 20971520 4194304} {4 gp/L02.parity 20971520 4194304} {5 gp/L02.parity 20971520 4194304}]"
	if got != want {
		t.Fatalf("stripe L2 slot 5:\n got %s\nwant %s", got, want)
	}
	if got := fmt.Sprint(pg.SmallStripe(100, 7)[5]); got != "{5 gp/small.parity 100 7}" {
		t.Fatalf("small stripe: %s", got)
	}
}

func TestDecodeRecordRefuses(t *testing.T) {
	pg := testPG(t, 1<<20, 0)
	r, _ := pg.Place(pg.Geo.Partition(5<<20 + 3))
	r.Sums = sums(pg, r)
	enc, err := r.AppendBinary(nil, pg.Geo)
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		if _, err := DecodeRecord(enc[:i], pg.Geo); !errors.Is(err, ErrCorruptRecord) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
	}
	if _, err := DecodeRecord(append(enc, 0), pg.Geo); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := r
	bad.Sums = bad.Sums[1:]
	if _, err := bad.AppendBinary(nil, pg.Geo); !errors.Is(err, ErrPlacement) {
		t.Fatalf("missing checksum: %v", err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	g, _ := NewGeometry(1<<20, 2, 0)
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 3, 0x80, 0x80, 0x80, 0x03, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b, g)
		if err != nil {
			return
		}
		enc, err := r.AppendBinary(nil, g)
		if err != nil || string(enc) != string(b) {
			// Non-minimal uvarints decode but re-encode shorter; the
			// record must still be the same.
			if back, err2 := DecodeRecord(enc, g); err != nil || err2 != nil || fmt.Sprint(back) != fmt.Sprint(r) {
				t.Fatalf("%x decodes to %+v, re-encodes to %x (%v, %v)", b, r, enc, err, err2)
			}
		}
	})
}
