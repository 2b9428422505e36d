package cairn

import (
	"strconv"
	"strings"
)

// Usage counts what the metadata store names: the objects of every
// bucket and of every code, and the shard files on every disk. The store
// keeps the counts up to date in the same transaction as each commit,
// delete, overwrite, part upload and repair (docs/design/meta.md,
// "Usage"), so they are what the manifests say without a scan.
type Usage struct {
	// Buckets counts each bucket's committed objects.
	Buckets map[string]Tally `json:"buckets"`
	// Codes counts committed objects by the code of their shards
	// (UsageCode): the policy, or a small object's replicas.
	Codes map[string]Tally `json:"codes"`
	// Disks counts the shard files of committed objects and of uploaded
	// parts of multipart uploads in progress, by disk.
	Disks map[DiskID]DiskTally `json:"disks"`
}

// Tally counts objects and their bytes.
type Tally struct {
	Objects int64 `json:"objects"`
	Logical int64 `json:"logical"` // the objects' bytes
	Stored  int64 `json:"stored"`  // their shard files' bytes on disk (ShardFileBytes)
}

// Add returns t plus u.
func (t Tally) Add(u Tally) Tally {
	return Tally{Objects: t.Objects + u.Objects, Logical: t.Logical + u.Logical, Stored: t.Stored + u.Stored}
}

// Ratio returns stored ÷ logical bytes (0 without logical bytes).
func (t Tally) Ratio() float64 {
	if t.Logical <= 0 {
		return 0
	}
	return float64(t.Stored) / float64(t.Logical)
}

// DiskTally counts shard files on one disk.
type DiskTally struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"` // on disk (ShardFileBytes)
}

// Add returns t plus u.
func (t DiskTally) Add(u DiskTally) DiskTally {
	return DiskTally{Files: t.Files + u.Files, Bytes: t.Bytes + u.Bytes}
}

// ShardFileBytes returns the bytes a shard file with n bytes of content
// takes in a volume: the content, a CRC-32C per 64 KiB block and a 32-byte
// footer (docs/design/volume.md, "Shard file"; node/volume checks that it
// agrees), plus the identity it carries if any (ShardLoc.Ident).
func ShardFileBytes(n int64) int64 {
	const block, crc, footer = 64 << 10, 4, 32
	return n + crc*((n+block-1)/block) + footer
}

// UsageCode returns the name a policy's (or code's) objects are counted
// under in Usage.Codes: the code without a read mode ("rs-4-2/read=all"
// counts as "rs-4-2").
func UsageCode(policy string) string {
	code, _, _ := strings.Cut(policy, "/")
	return code
}

// Stored returns the shard files of a layout and their bytes on disk, by
// disk.
func (l *Layout) Stored() map[DiskID]DiskTally {
	out := map[DiskID]DiskTally{}
	for _, s := range l.Shards {
		out[s.Disk] = out[s.Disk].Add(DiskTally{Files: 1, Bytes: ShardFileBytes(s.Size) + int64(s.Ident)})
	}
	for _, st := range l.Coded {
		bs := st.BlockSize
		if bs == 0 {
			bs = l.BlockSize
		}
		for _, b := range st.Blocks {
			out[b.Disk] = out[b.Disk].Add(DiskTally{Files: 1, Bytes: ShardFileBytes(int64(bs)) + int64(b.Ident)})
		}
	}
	return out
}

// Stored returns the shard files of m (of every part of a multipart
// object) and their bytes on disk, by disk.
func (m *Manifest) Stored() map[DiskID]DiskTally {
	out := m.Layout.Stored()
	for i := range m.Parts {
		for d, t := range m.Parts[i].Stored() {
			out[d] = out[d].Add(t)
		}
	}
	return out
}

// Tally returns m counted as one object: its content size (the
// plaintext's, for an encrypted object) and its shard files' bytes on disk.
//
// An exported cold object (Manifest.Cold) has no shard files of its own:
// its stored bytes are ColdStored's, counted in its bucket and code but on
// no disk (its group's disks are not in the manifest, and change when the
// export job rebuilds one).
func (m *Manifest) Tally() Tally {
	t := Tally{Objects: 1, Logical: m.ContentSize()}
	for _, d := range m.Stored() {
		t.Stored += d.Bytes
	}
	if m.Cold != nil {
		t.Stored += ColdStored(m.Policy, m.Size)
	}
	return t
}

// ColdStored returns the bytes an exported object of size bytes takes in
// its cold group under policy clay-K-M-D/gp=…: its pieces on its data disk
// and its share of the parity of its rows and small pages, size·(K+M)/K
// rounded up (docs/design/cold.md, "Usage"). 0 if policy names no K and M.
func ColdStored(policy string, size int64) int64 {
	code, _, _ := strings.Cut(policy, "/")
	f := strings.Split(code, "-")
	if len(f) < 3 {
		return 0
	}
	k, err1 := strconv.Atoi(f[1])
	m, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || k < 1 || m < 0 {
		return 0
	}
	return (size*int64(k+m) + int64(k) - 1) / int64(k)
}
