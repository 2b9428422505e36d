package cairn_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
)

// The objects the cases below break, one per form, as the client writes
// them: rs-4-2 (k 4, n 6) and lt-16-2 (k 16).
const (
	rsK, rsN = 4, 6
	ltK, ltN = 16, 32
)

// shards returns n shard locations of size bytes on distinct disks.
func shards(n int, size int64) []cairn.ShardLoc {
	out := make([]cairn.ShardLoc, n)
	for i := range out {
		out[i] = cairn.ShardLoc{Disk: cairn.DiskID(fmt.Sprintf("node%d/disk1", i+1)), Size: size, CRC: uint32(i)}
	}
	return out
}

// rsObject is 5000 bytes of rs-4-2 in 1 KiB blocks: 2 stripes, so shards
// of 2 KiB.
func rsObject() *cairn.Manifest {
	return &cairn.Manifest{Bucket: "bkt", Key: "k", Version: strings.Repeat("a", 32), Size: 5000, ETag: "e",
		Created: time.Unix(1, 0), Policy: "rs-4-2",
		Layout: cairn.Layout{BlockSize: 1024, PG: 3, Shards: shards(rsN, 2048)}}
}

// codedStripes returns n coded stripes of three blocks each.
func codedStripes(n int) []cairn.CodedStripe {
	out := make([]cairn.CodedStripe, n)
	for s := range out {
		out[s] = cairn.CodedStripe{Version: fmt.Sprintf("%032x", s+1), Blocks: []cairn.BlockLoc{
			{ID: 0, Disk: "node1/disk1", CRC: 1}, {ID: 17, Disk: "node2/disk1", CRC: 2}, {ID: 3, Disk: "node1/disk1", CRC: 3},
		}}
	}
	return out
}

// ltObject is 2000 bytes of lt-16-2 in 64-byte blocks: 2 stripes.
func ltObject() *cairn.Manifest {
	return &cairn.Manifest{Bucket: "bkt", Key: "k", Version: strings.Repeat("b", 32), Size: 2000, Policy: "lt-16-2",
		Layout: cairn.Layout{BlockSize: 64, Coded: codedStripes(2)}}
}

// multipartObject has two rs-4-2 parts: 6000 bytes (2 stripes of 1 KiB
// blocks) and 1234 bytes (1 stripe of 309-byte blocks).
func multipartObject() *cairn.Manifest {
	return &cairn.Manifest{Bucket: "bkt", Key: "k", Version: strings.Repeat("c", 32), Size: 7234, Policy: "rs-4-2",
		Parts: []cairn.Part{
			{Number: 1, Version: strings.Repeat("1", 32), Size: 6000, Layout: cairn.Layout{BlockSize: 1024, PG: 13, Shards: shards(rsN, 2048)}},
			{Number: 2, Version: strings.Repeat("2", 32), Size: 1234, Layout: cairn.Layout{BlockSize: 309, PG: 16, Shards: shards(rsN, 309)}},
		}}
}

// encrypted returns m marked as encrypted with SSE-S3: its stored bytes are
// the ciphertext of plain bytes.
func encrypted(m *cairn.Manifest, plain int64) *cairn.Manifest {
	m.Encryption = &cairn.Encryption{Scheme: cairn.SSES3, Cipher: cairn.Cipher, KeyID: "k1", SealedKey: []byte{1}, Size: plain}
	return m
}

func encryptedRS() *cairn.Manifest        { return encrypted(rsObject(), 5000-16) }
func encryptedMultipart() *cairn.Manifest { return encrypted(multipartObject(), 6000-16+1234-16) }

func TestValidateAcceptsEveryForm(t *testing.T) {
	empty := rsObject()
	empty.Size, empty.BlockSize, empty.Shards = 0, 1, shards(rsN, 1)
	spare := rsObject()
	spare.Shards[0].Row, spare.Shards[4].Row = 7, 6
	// Shards sized to the data: 904 bytes in the last stripe, in blocks
	// of 226 (and the padded form of older writers, rsObject).
	trimmed := rsObject()
	for i := range trimmed.Shards {
		trimmed.Shards[i].Size = 1024 + 226
	}
	trimmedLT := ltObject()
	trimmedLT.Coded[1].BlockSize = 61 // 976 bytes in 16 blocks
	small := rsObject()
	small.Size, small.Code, small.BlockSize, small.Shards = 5000, "rep-3", 5000, shards(3, 5000)
	codedParts := ltObject()
	codedParts.Parts = []cairn.Part{{Number: 3, Version: "p3", Size: 2000, Layout: codedParts.Layout}}
	codedParts.Layout = cairn.Layout{}
	staged := rsObject()
	staged.Policy, staged.Code = "clay-4-2-5/gp=32KiB:2", "rs-4-2"
	stagedParts := multipartObject()
	stagedParts.Policy, stagedParts.Code = "clay-4-2-5/gp=32KiB:2", "rs-4-2"
	tests := []struct {
		name string
		m    *cairn.Manifest
		k, n int
	}{
		{"rs", rsObject(), rsK, rsN},
		{"staged for cold", staged, rsK, rsN},
		{"cold", coldObject(), rsK, rsN},
		{"staged multipart", stagedParts, rsK, rsN},
		{"cold multipart", coldMultipart(), rsK, rsN},
		{"rs sized to the data", trimmed, rsK, rsN},
		{"lt sized to the data", trimmedLT, ltK, ltN},
		{"small object replicated", small, 1, 3},
		{"empty", empty, rsK, rsN},
		{"spare rows", spare, rsK, rsN},
		{"lt", ltObject(), ltK, ltN},
		{"multipart", multipartObject(), rsK, rsN},
		{"multipart naming its upload", func() *cairn.Manifest { m := multipartObject(); m.Upload = strings.Repeat("a", 32); return m }(), rsK, rsN},
		{"multipart lt", codedParts, ltK, ltN},
		{"encrypted", encryptedRS(), rsK, rsN},
		{"encrypted multipart", encryptedMultipart(), rsK, rsN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.m.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if err := tt.m.ValidateStored(tt.k, tt.n); err != nil {
				t.Errorf("ValidateStored(%d, %d): %v", tt.k, tt.n, err)
			}
		})
	}
}

// TestValidateRefuses breaks one rule per case. Validate's error wraps
// ErrInvalid and says which rule; ValidateStored refuses the same
// manifest with ErrCorrupt.
func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name string
		base func() *cairn.Manifest
		edit func(m *cairn.Manifest)
		want string // in the error
	}{
		// What names the object.
		{"nil", func() *cairn.Manifest { return nil }, nil, "nil manifest"},
		{"no bucket", rsObject, func(m *cairn.Manifest) { m.Bucket = "" }, "no bucket"},
		{"no key", rsObject, func(m *cairn.Manifest) { m.Key = "" }, "object key is empty"},
		{"key too long", rsObject, func(m *cairn.Manifest) { m.Key = strings.Repeat("k", cairn.MaxKeyLen+1) }, "longer than"},
		{"key not UTF-8", rsObject, func(m *cairn.Manifest) { m.Key = "a\xff" }, "not valid UTF-8"},
		{"no version", rsObject, func(m *cairn.Manifest) { m.Version = "" }, "no version"},
		{"no policy", rsObject, func(m *cairn.Manifest) { m.Policy = "" }, "no policy"},
		{"negative size", rsObject, func(m *cairn.Manifest) { m.Size = -1 }, "size -1"},
		{"single-part names an upload", rsObject, func(m *cairn.Manifest) { m.Upload = strings.Repeat("a", 32) }, "single-part object names an upload"},

		// Encryption.
		{"unknown scheme", encryptedRS, func(m *cairn.Manifest) { m.Encryption.Scheme = "rot13" }, `encryption scheme "rot13"`},
		{"unknown cipher", encryptedRS, func(m *cairn.Manifest) { m.Encryption.Cipher = "des" }, `cipher "des"`},
		{"no sealed key", encryptedRS, func(m *cairn.Manifest) { m.Encryption.SealedKey = nil }, "without a sealed data key"},
		{"sse-s3 without key ID", encryptedRS, func(m *cairn.Manifest) { m.Encryption.KeyID = "" }, "without a key ID"},
		{"sse-c without HMAC", encryptedRS, func(m *cairn.Manifest) { m.Encryption.Scheme = cairn.SSEC }, "HMAC and salt"},
		{"plaintext size off", encryptedRS, func(m *cairn.Manifest) { m.Encryption.Size = 4985 }, "encrypts to 5001 bytes, not 5000"},
		{"part no stream", encryptedMultipart, func(m *cairn.Manifest) {
			m.Parts[1].Size = 16 + cairn.SegmentSize + 1
			m.Parts[1].BlockSize, m.Parts[1].Shards = 16385, shards(rsN, 16385)
			m.Size = 6000 + m.Parts[1].Size
		}, "part 2: 65553 bytes are no encrypted part's size"},
		{"parts' plaintext off", encryptedMultipart, func(m *cairn.Manifest) { m.Encryption.Size++ }, "parts hold 7202 plaintext bytes, the object 7203"},

		// The cold tier.
		{"cold with shards", coldObject, func(m *cairn.Manifest) { m.Layout = rsObject().Layout }, "a cold object with a layout of its own"},
		{"cold with a code", coldObject, func(m *cairn.Manifest) { m.Code = "rep-3" }, "a cold object with a layout of its own"},
		{"cold with parts' layouts", coldObject, func(m *cairn.Manifest) { m.Parts = multipartObject().Parts }, "part 1: a layout in a cold object"},
		{"cold parts out of order", coldMultipart, func(m *cairn.Manifest) { m.Parts[0].Number = 3 }, "part 2 after part 3"},
		{"cold parts of one version", coldMultipart, func(m *cairn.Manifest) { m.Parts[1].Version = m.Parts[0].Version }, "is another part's"},
		{"cold parts' sizes", coldMultipart, func(m *cairn.Manifest) { m.Size++ }, "its parts add up to"},
		{"cold part without version", coldMultipart, func(m *cairn.Manifest) { m.Parts[1].Version = "" }, "part 2: no version"},
		{"cold without record", coldObject, func(m *cairn.Manifest) { m.Cold.Record = nil }, "without its group or record"},
		{"cold without group", coldObject, func(m *cairn.Manifest) { m.Cold.Group = "" }, "without its group or record"},
		{"cold of a warm policy", coldObject, func(m *cairn.Manifest) { m.Policy = "rs-4-2" }, "a cold object of policy rs-4-2"},
		{"staged without warm code", rsObject, func(m *cairn.Manifest) { m.Policy = "clay-4-2-5/gp=32KiB:2" }, "a staged cold object without its warm code"},
		{"staged multipart without warm code", multipartObject, func(m *cairn.Manifest) { m.Policy = "clay-4-2-5/gp=32KiB:2" }, "a staged cold object without its warm code"},
		{"staged multipart with a layout", multipartObject, func(m *cairn.Manifest) {
			m.Policy, m.Code, m.BlockSize = "clay-4-2-5/gp=32KiB:2", "rs-4-2", 1024
		}, "a multipart object has a layout of its own"},
		{"warm multipart with a code", multipartObject, func(m *cairn.Manifest) { m.Code = "rep-3" }, "a multipart object has a layout of its own"},
		{"staged multipart with coded parts", ltObject, func(m *cairn.Manifest) {
			m.Parts = []cairn.Part{{Number: 1, Version: "p1", Size: m.Size, Layout: m.Layout}}
			m.Layout = cairn.Layout{Code: "lt-8-4"}
			m.Policy = "clay-4-2-5/gp=32KiB:2"
		}, "a staged cold object with coded parts"},
		{"cold and raidp", coldObject, func(m *cairn.Manifest) { m.RAIDP = &cairn.RAIDPLayout{Group: "g1", Generation: 1} }, "both in a RAIDP group and in the cold tier"},
		{"staged with a raidp layout", rsObject, func(m *cairn.Manifest) {
			m.Policy, m.Code, m.Layout = "clay-4-2-5/gp=32KiB:2", "", cairn.Layout{}
			m.RAIDP = &cairn.RAIDPLayout{Group: "g1", Generation: 1}
		}, "a RAIDP layout with policy clay-4-2-5/gp=32KiB:2"},

		// One form.
		{"no layout", rsObject, func(m *cairn.Manifest) { m.Layout = cairn.Layout{} }, "neither shards nor coded stripes"},
		{"empty shards", rsObject, func(m *cairn.Manifest) { m.Shards = []cairn.ShardLoc{} }, "neither shards nor coded stripes"},
		{"shards and coded", rsObject, func(m *cairn.Manifest) { m.Coded = codedStripes(2) }, "both shards and coded stripes"},
		{"coded and shards", ltObject, func(m *cairn.Manifest) { m.Shards = shards(1, 64) }, "both shards and coded stripes"},

		// Shards.
		{"block size 0", rsObject, func(m *cairn.Manifest) { m.BlockSize = 0 }, "block size 0"},
		{"negative block size", rsObject, func(m *cairn.Manifest) { m.BlockSize = -1024 }, "block size -1024"},
		{"negative PG", rsObject, func(m *cairn.Manifest) { m.PG = -1 }, "placement group -1"},
		{"shard on no disk", rsObject, func(m *cairn.Manifest) { m.Shards[2].Disk = "" }, "shard 2 is on no disk"},
		{"shards differ in size", rsObject, func(m *cairn.Manifest) { m.Shards[5].Size = 1024 }, "differ in size"},
		{"shard size 0", rsObject, func(m *cairn.Manifest) {
			for i := range m.Shards {
				m.Shards[i].Size = 0
			}
		}, "shard size 0 is not positive"},
		{"spare row among the slots", rsObject, func(m *cairn.Manifest) { m.Shards[1].Row = 3 }, "holds row 3"},
		{"negative row", rsObject, func(m *cairn.Manifest) { m.Shards[1].Row = -6 }, "holds row -6"},
		{"spare row past shard names", rsObject, func(m *cairn.Manifest) { m.Shards[1].Row = cairn.MaxShardIndex + 1 }, "holds row 10000"},
		{"spare row twice", rsObject, func(m *cairn.Manifest) { m.Shards[1].Row, m.Shards[4].Row = 6, 6 }, "two shards hold row 6"},
		{"more shards than names", rsObject, func(m *cairn.Manifest) { m.Shards = shards(cairn.MaxShardIndex+2, 2048) }, "more than shard names allow"},

		// Coded stripes.
		{"coded block size 0", ltObject, func(m *cairn.Manifest) { m.BlockSize = 0 }, "block size 0"},
		{"coded with a PG", ltObject, func(m *cairn.Manifest) { m.PG = 4 }, "placement group 4"},
		{"coded stripe without version", ltObject, func(m *cairn.Manifest) { m.Coded[1].Version = "" }, "coded stripe 1 has no version"},
		{"coded stripes share a version", ltObject, func(m *cairn.Manifest) { m.Coded[1].Version = m.Coded[0].Version }, "another stripe's"},
		{"coded stripe without blocks", ltObject, func(m *cairn.Manifest) { m.Coded[0].Blocks = nil }, "coded stripe 0 has no blocks"},
		{"negative block ID", ltObject, func(m *cairn.Manifest) { m.Coded[0].Blocks[1].ID = -1 }, "block ID -1"},
		{"block ID past shard names", ltObject, func(m *cairn.Manifest) { m.Coded[0].Blocks[1].ID = cairn.MaxShardIndex + 1 }, "block ID 10000"},
		{"block twice", ltObject, func(m *cairn.Manifest) { m.Coded[1].Blocks[2].ID = 0 }, "block 0 twice"},
		{"block on no disk", ltObject, func(m *cairn.Manifest) { m.Coded[1].Blocks[2].Disk = "" }, "block 3 is on no disk"},
		{"block size of a stripe but the last", ltObject, func(m *cairn.Manifest) { m.Coded[0].BlockSize = 32 }, "only the last stripe may"},
		{"stripe blocks past the block size", ltObject, func(m *cairn.Manifest) { m.Coded[1].BlockSize = 65 }, "blocks of 65 bytes, outside 1..64"},
		{"negative stripe block size", ltObject, func(m *cairn.Manifest) { m.Coded[1].BlockSize = -1 }, "blocks of -1 bytes"},

		// A code of its own.
		{"coded with a code", ltObject, func(m *cairn.Manifest) { m.Code = "rep-3" }, "coded stripes with a code of their own"},
		{"part with a code", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Code = "rep-3" }, "part 2 has a code of its own"},
		{"multipart with a code", multipartObject, func(m *cairn.Manifest) { m.Code = "rep-3" }, "layout of its own"},

		// Multipart.
		{"multipart with shards", multipartObject, func(m *cairn.Manifest) { m.Shards = shards(rsN, 2048) }, "layout of its own"},
		{"multipart with coded", multipartObject, func(m *cairn.Manifest) { m.Coded = codedStripes(1) }, "layout of its own"},
		{"multipart with a block size", multipartObject, func(m *cairn.Manifest) { m.BlockSize = 1024 }, "layout of its own"},
		{"multipart with a PG", multipartObject, func(m *cairn.Manifest) { m.PG = 9 }, "layout of its own"},
		{"part 0", multipartObject, func(m *cairn.Manifest) { m.Parts[0].Number = 0 }, "part 0: number outside"},
		{"part past MaxParts", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Number = cairn.MaxParts + 1 }, "number outside"},
		{"parts out of order", multipartObject, func(m *cairn.Manifest) { m.Parts[0].Number = 3 }, "part 2 after part 3"},
		{"part number twice", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Number = 1 }, "part 1 after part 1"},
		{"part without version", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Version = "" }, "part 2: no version"},
		{"parts share a version", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Version = m.Parts[0].Version }, "another part's"},
		{"part of negative size", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Size = -1 }, "part 2: size -1"},
		{"part without layout", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Layout = cairn.Layout{} }, "part 2: neither"},
		{"part with both forms", multipartObject, func(m *cairn.Manifest) { m.Parts[0].Coded = codedStripes(1) }, "part 1: both"},
		{"part with a bad shard", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Shards[0].Disk = "" }, "part 2: shard 0 is on no disk"},
		{"parts of two forms", multipartObject, func(m *cairn.Manifest) {
			m.Parts[1].Layout = cairn.Layout{BlockSize: 64, Coded: codedStripes(2)}
		}, "different forms"},
		{"parts of two shard counts", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Shards = shards(rsN+1, 309) }, "have 6 and 7 shards"},
		{"parts do not add up", multipartObject, func(m *cairn.Manifest) { m.Size++ }, "parts add up to 7234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.base()
			if tt.edit != nil {
				tt.edit(m)
			}
			err := m.Validate()
			if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want ErrInvalid saying %q", err, tt.want)
			}
			err = m.ValidateStored(rsK, rsN)
			if !errors.Is(err, cairn.ErrCorrupt) || errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidateStored: %v, want ErrCorrupt (not ErrInvalid) saying %q", err, tt.want)
			}
		})
	}
}

// TestValidateStoredAgainstTheCode breaks the rules that need the code:
// the shard count and the stripes the size needs.
func TestValidateStoredAgainstTheCode(t *testing.T) {
	tests := []struct {
		name string
		base func() *cairn.Manifest
		edit func(m *cairn.Manifest)
		k, n int
		want string
	}{
		{"too few shards", rsObject, func(m *cairn.Manifest) { m.Shards = m.Shards[:5] }, rsK, rsN, "5 shards, the code has 6"},
		{"too many shards", rsObject, nil, rsK, rsN - 1, "6 shards, the code has 5"},
		{"shards short of the size", rsObject, func(m *cairn.Manifest) { m.Size = 9000 }, rsK, rsN, "want 2250 to 3072 (3 stripes"},
		{"shards past the size", rsObject, func(m *cairn.Manifest) { m.Size = 4000 }, rsK, rsN, "want 1000 to 1024 (1 stripes"},
		{"last block short of the data", rsObject, func(m *cairn.Manifest) {
			for i := range m.Shards {
				m.Shards[i].Size = 1024 + 225 // 5000 − 4096 = 904 bytes need 226 per block
			}
		}, rsK, rsN, "shards of 1249 bytes, want 1250 to 2048 (2 stripes of 1024-byte blocks, 904 bytes in the last)"},
		{"last coded stripe short of the data", ltObject, func(m *cairn.Manifest) { m.Coded[1].BlockSize = 60 }, ltK, ltN,
			"blocks of 60 bytes, want at least 61 (976 bytes in 16 blocks)"},
		{"too few coded stripes", ltObject, func(m *cairn.Manifest) { m.Size = 3000 }, ltK, ltN, "2 coded stripes, want 3"},
		{"too many coded stripes", ltObject, func(m *cairn.Manifest) { m.Size = 1000 }, ltK, ltN, "2 coded stripes, want 1"},
		{"empty object without a stripe", ltObject, func(m *cairn.Manifest) { m.Size = 0 }, ltK, ltN, "2 coded stripes, want 1"},
		{"part short of its size", multipartObject, func(m *cairn.Manifest) { m.Parts[1].Size, m.Size = 2000, 8000 }, rsK, rsN,
			"part 2: shards of 309 bytes, want 500 to 618"},
		{"part with too few shards", multipartObject, func(m *cairn.Manifest) {
			m.Parts[0].Shards, m.Parts[1].Shards = m.Parts[0].Shards[:4], m.Parts[1].Shards[:4]
		}, rsK, rsN, "part 1: 4 shards, the code has 6"},
		{"no data blocks", rsObject, nil, 0, rsN, "a code of 0 data blocks"},
		{"fewer shards than data blocks", rsObject, nil, rsK, rsK - 1, "a code of 4 data blocks and 3 shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.base()
			if tt.edit != nil {
				tt.edit(m)
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Validate, which does not know the code: %v", err)
			}
			err := m.ValidateStored(tt.k, tt.n)
			if !errors.Is(err, cairn.ErrCorrupt) || errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidateStored(%d, %d): %v, want ErrCorrupt saying %q", tt.k, tt.n, err, tt.want)
			}
		})
	}
}

func TestPartAndLayoutValidate(t *testing.T) {
	p := multipartObject().Parts[0]
	if err := p.Validate(); err != nil {
		t.Fatalf("a valid part: %v", err)
	}
	p.Number = 0
	if err := p.Validate(); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "part 0: number outside") {
		t.Fatalf("part 0: %v", err)
	}
	var zero cairn.Layout
	if err := zero.Validate(); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("the zero layout: %v", err)
	}
	if err := ltObject().Layout.Validate(); err != nil {
		t.Fatalf("a coded layout: %v", err)
	}
}

// StripeBlock is BlockSize but in the last stripe, where it is what the
// layout holds: padded (older writers), sized to the data, or a coded
// stripe's own block size.
func TestStripeBlock(t *testing.T) {
	trimmed := rsObject()
	for i := range trimmed.Shards {
		trimmed.Shards[i].Size = 1024 + 226
	}
	trimmedLT := ltObject()
	trimmedLT.Coded[1].BlockSize = 61
	tests := []struct {
		name string
		m    *cairn.Manifest
		k    int
		want []int64 // by stripe
	}{
		{"padded", rsObject(), rsK, []int64{1024, 1024}},
		{"sized to the data", trimmed, rsK, []int64{1024, 226}},
		{"coded", ltObject(), ltK, []int64{64, 64}},
		{"coded sized to the data", trimmedLT, ltK, []int64{64, 61}},
		{"one stripe", multipartObject().PartManifest(multipartObject().Parts[1]), rsK, []int64{309}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := tt.m.Stripes(tt.k); n != int64(len(tt.want)) {
				t.Fatalf("%d stripes, want %d", n, len(tt.want))
			}
			for s, want := range tt.want {
				if got := tt.m.StripeBlock(tt.m.Size, tt.k, int64(s)); got != want {
					t.Errorf("stripe %d: block of %d bytes, want %d", s, got, want)
				}
			}
		})
	}
	small := rsObject()
	if small.LayoutCode() != "rs-4-2" {
		t.Errorf("LayoutCode without a code: %s", small.LayoutCode())
	}
	small.Code = "rep-3"
	if small.LayoutCode() != "rep-3" {
		t.Errorf("LayoutCode with a code: %s", small.LayoutCode())
	}
}

// coldMultipart is a multipart object exported to the cold tier: its
// parts keep their records with zero layouts.
func coldMultipart() *cairn.Manifest {
	m := multipartObject()
	m.Policy = "clay-4-2-5/gp=32KiB:2"
	for i := range m.Parts {
		m.Parts[i].Layout = cairn.Layout{}
	}
	m.Cold = &cairn.ColdRef{Group: "g1", Record: []byte{1, 0, 0}}
	return m
}

// coldObject is an object exported to the cold tier: no layout, a group
// and a record.
func coldObject() *cairn.Manifest {
	m := rsObject()
	m.Layout = cairn.Layout{}
	m.Policy = "clay-4-2-5/gp=32KiB:2"
	m.Cold = &cairn.ColdRef{Group: "g1", Record: []byte{1, 0, 0}}
	return m
}
