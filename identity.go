package cairn

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
)

// ShardIdentity names what a shard file holds: which object (or part of
// a multipart upload) and which code row. A shard written since format
// version 2 of the volume carries it on disk before its footer
// (docs/design/volume.md, "Shard identity"), so the file can be matched
// with the manifest that should name it: scrub checks the match, garbage
// collection finds the files no manifest names, and a lost metadata store
// can be rebuilt from the disks.
//
// Every field is known when the shard is written, before the manifest
// exists (Size only if the body's length was announced), and every field
// can be derived from the committed manifest again (IdentityOf), so a
// repair writes the identity the PUT did (with the size, if the PUT did
// not know it: the manifest records the rebuilt file's identity length,
// ShardLoc.Ident, from what the node stored).
type ShardIdentity struct {
	Bucket  string `json:"bucket"`
	Key     string `json:"key"`
	Version string `json:"version"` // the object's, or the part's: names the file with Row
	// Part is the part number of a multipart upload's part (0: a
	// single-part object), and Upload the upload's ID.
	Part   int    `json:"part,omitempty"`
	Upload string `json:"upload,omitempty"`
	Row    int    `json:"row"` // the code row the shard holds (ShardName(Version, Row)); a coded block's ID
	// Object is set for a block of a fountain-coded stripe: the object's
	// (or part's) version, Version being the stripe's (CodedStripe) and
	// Row the block's ID.
	Object string `json:"object,omitempty"`
	Policy string `json:"policy"` // the object's policy
	// Code is the layout's code when it is not the policy's
	// (Layout.Code: a small object's replicas).
	Code      string `json:"code,omitempty"`
	BlockSize int    `json:"block_size"` // the layout's BlockSize
	PG        int    `json:"pg"`         // the layout's placement group
	// Size is the object's (or the part's) stored size, Manifest.Size
	// (Part.Size), when the writer knew it before the body ended (a
	// Content-Length); −1 when it did not. Rebuilding a manifest from
	// disks needs it: the shards' lengths do not tell where the data of
	// the last stripe ends.
	Size int64 `json:"size"`
	// ContentType is the object's (empty for a part).
	ContentType string `json:"content_type,omitempty"`
}

// MaxIdentityBytes bounds an encoded identity (a key is at most 1024
// bytes, so real identities stay far below it).
const MaxIdentityBytes = 4096

// identityCRCSize is the CRC-32C that ends an encoded identity.
const identityCRCSize = 4

var identityTable = crc32.MakeTable(crc32.Castagnoli)

// Encode returns id as stored in a shard file: its JSON encoding followed
// by the CRC-32C of the JSON, little endian. The encoding is
// deterministic: equal identities encode to equal bytes.
func (id ShardIdentity) Encode() ([]byte, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("encode shard identity: %w", err)
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, identityTable))
	if len(b) > MaxIdentityBytes {
		return nil, fmt.Errorf("%w: shard identity is %d bytes, more than %d", ErrInvalid, len(b), MaxIdentityBytes)
	}
	return b, nil
}

// DecodeIdentity parses what Encode made. A bad checksum or encoding is
// ErrCorrupt; a well-formed identity that Validate refuses too.
func DecodeIdentity(b []byte) (ShardIdentity, error) {
	var id ShardIdentity
	if len(b) <= identityCRCSize || len(b) > MaxIdentityBytes {
		return id, fmt.Errorf("%w: shard identity of %d bytes (1 to %d allowed)", ErrCorrupt, len(b), MaxIdentityBytes)
	}
	body := b[:len(b)-identityCRCSize]
	if crc32.Checksum(body, identityTable) != binary.LittleEndian.Uint32(b[len(body):]) {
		return id, fmt.Errorf("%w: shard identity checksum mismatch", ErrCorrupt)
	}
	if err := json.Unmarshal(body, &id); err != nil {
		return id, fmt.Errorf("%w: shard identity: %v", ErrCorrupt, err)
	}
	if err := id.Validate(); err != nil {
		return id, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return id, nil
}

// Validate checks the fields an identity must have: a bucket, a key, a
// version that names shard files, a row and part number in range, and an
// upload exactly for a part. The error wraps ErrInvalid.
func (id ShardIdentity) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: shard identity: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case id.Bucket == "" || id.Key == "":
		return bad("bucket %q and key %q must not be empty", id.Bucket, id.Key)
	case ValidateShardName(ShardName(id.Version, 0)) != nil:
		return bad("version %q is not 32 lower-case hex digits", id.Version)
	case id.Row < 0 || id.Row > MaxShardIndex:
		return bad("row %d (0 to %d allowed)", id.Row, MaxShardIndex)
	case id.Part < 0 || id.Part > MaxParts:
		return bad("part %d (0 to %d allowed)", id.Part, MaxParts)
	case (id.Part == 0) != (id.Upload == ""):
		return bad("part %d with upload %q: a part names its upload, an object none", id.Part, id.Upload)
	case id.BlockSize < 0 || id.PG < 0:
		return bad("block size %d, placement group %d", id.BlockSize, id.PG)
	case id.Size < -1:
		return bad("size %d", id.Size)
	case id.Object != "" && ValidateShardName(ShardName(id.Object, 0)) != nil:
		return bad("object version %q is not 32 lower-case hex digits", id.Object)
	}
	return nil
}

// Name is the shard file the identity belongs in.
func (id ShardIdentity) Name() string { return ShardName(id.Version, id.Row) }

// IdentityOf returns the identity of the shard file holding row of the
// layout of m (part > 0: of part number part, which must be among
// m.Parts; Upload is then m.Upload). It is what the writer of that file
// recorded, provided the manifest was committed as written.
func (m *Manifest) IdentityOf(part, row int) (ShardIdentity, error) {
	id := ShardIdentity{Bucket: m.Bucket, Key: m.Key, Version: m.Version, Row: row, Policy: m.Policy,
		Size: m.Size, ContentType: m.ContentType}
	l := &m.Layout
	if part > 0 {
		i := -1
		for k := range m.Parts {
			if m.Parts[k].Number == part {
				i = k
			}
		}
		if i < 0 {
			return id, fmt.Errorf("%w: %s/%s has no part %d", ErrInvalid, m.Bucket, m.Key, part)
		}
		l = &m.Parts[i].Layout
		id.Version, id.Part, id.Upload = m.Parts[i].Version, part, m.Upload
		id.Size, id.ContentType = m.Parts[i].Size, ""
		// UploadPart recorded the upload's policy, the parts' code: the
		// policy, or a staged cold object's warm code (LayoutCode).
		id.Policy = m.LayoutCode()
	}
	id.Code, id.BlockSize, id.PG = l.Code, l.BlockSize, l.PG
	if part == 0 && IsColdPolicy(m.Policy) && m.Cold == nil {
		// Staged: written with the warm code as its policy (a PUT's
		// staging policy, or a warm object's own before cold.Stage), which
		// Code keeps. Not exact for a staged small object's replicas: its
		// writer recorded its first policy, which the staged manifest lost.
		id.Policy, id.Code = m.Code, ""
	}
	return id, nil
}

// Reference is how the committed metadata names a shard file
// (Layout.Refers).
type Reference int

const (
	// Unnamed: no layout names the file on its disk. It is an orphan —
	// of an overwritten or deleted object, a failed write, a repair that
	// lost its race — unless a write that will name it is still under
	// way (a PUT before its commit, a rebuilt shard before the manifest
	// moves to it), which only its age tells.
	Unnamed Reference = iota
	// Named: a layout names the file on its disk, with its size and CRC.
	Named
	// Mismatch: a layout names the file on its disk but records another
	// size or CRC: the file is not what was written there (damage).
	Mismatch
)

func (r Reference) String() string {
	switch r {
	case Unnamed:
		return "unnamed"
	case Named:
		return "named"
	case Mismatch:
		return "mismatch"
	}
	return fmt.Sprintf("Reference(%d)", int(r))
}

// Refers says how l, the layout of the object (or part) of this version,
// names the file holding row id.Row of id.Version on disk — or, for a
// coded block (id.Object set), block id.Row of its stripe id.Version —
// whose footer says it has size content bytes with CRC crc. detail
// explains a Mismatch.
func (l *Layout) Refers(version string, id ShardIdentity, disk DiskID, size int64, crc uint32) (ref Reference, detail string) {
	if id.Object != "" {
		if version != id.Object {
			return Unnamed, ""
		}
		for _, st := range l.Coded {
			if st.Version != id.Version {
				continue
			}
			bs := int64(st.BlockSize)
			if bs == 0 {
				bs = int64(l.BlockSize)
			}
			for _, b := range st.Blocks {
				if b.ID != id.Row || b.Disk != disk {
					continue
				}
				if bs != size || b.CRC != crc {
					return Mismatch, fmt.Sprintf("the manifest of %s/%s records block %d of stripe %s as %d bytes with CRC %08x, the file has %d bytes with CRC %08x",
						id.Bucket, id.Key, b.ID, st.Version, bs, b.CRC, size, crc)
				}
				return Named, ""
			}
		}
		return Unnamed, ""
	}
	if version != id.Version {
		return Unnamed, ""
	}
	for i, s := range l.Shards {
		if RowOf(l.Shards, i) != id.Row || s.Disk != disk {
			continue
		}
		if s.Size != size || s.CRC != crc {
			return Mismatch, fmt.Sprintf("the manifest of %s/%s records shard %d as %d bytes with CRC %08x, the file has %d bytes with CRC %08x",
				id.Bucket, id.Key, i, s.Size, s.CRC, size, crc)
		}
		return Named, ""
	}
	return Unnamed, ""
}
