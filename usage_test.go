package cairn_test

import (
	"testing"

	"cairn"
)

func TestShardFileBytes(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{0, 32},                    // the footer alone
		{1, 1 + 4 + 32},            // one block
		{65536, 65536 + 4 + 32},    // one full block
		{65537, 65537 + 8 + 32},    // two
		{1 << 20, 1<<20 + 64 + 32}, // sixteen
	} {
		if got := cairn.ShardFileBytes(c.n); got != c.want {
			t.Errorf("ShardFileBytes(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// A manifest's tally: its size, and its shard files (every part's, every
// coded block's with the last stripe's own block size) on disk.
func TestManifestTally(t *testing.T) {
	rs := rsObject() // 6 shards of 2048 bytes
	if got, want := rs.Tally(), (cairn.Tally{Objects: 1, Logical: 5000, Stored: 6 * cairn.ShardFileBytes(2048)}); got != want {
		t.Errorf("rs: %+v, want %+v", got, want)
	}
	if d := rs.Stored()["node1/disk1"]; d != (cairn.DiskTally{Files: 1, Bytes: cairn.ShardFileBytes(2048)}) {
		t.Errorf("rs on node1/disk1: %+v", d)
	}
	lt := ltObject() // 2 stripes of 3 blocks of 64 bytes; blocks 0 and 3 of each on node1/disk1
	lt.Coded[1].BlockSize = 61
	if got, want := lt.Tally().Stored, 3*cairn.ShardFileBytes(64)+3*cairn.ShardFileBytes(61); got != want {
		t.Errorf("lt stored %d, want %d", got, want)
	}
	if d := lt.Stored()["node1/disk1"]; d.Files != 4 {
		t.Errorf("lt on node1/disk1: %+v, want 4 files", d)
	}
	mp := multipartObject() // parts of 6 shards of 2048 and of 309 bytes
	if got, want := mp.Tally(), (cairn.Tally{Objects: 1, Logical: 7234, Stored: 6*cairn.ShardFileBytes(2048) + 6*cairn.ShardFileBytes(309)}); got != want {
		t.Errorf("multipart: %+v, want %+v", got, want)
	}
	if got := (cairn.Tally{Logical: 100, Stored: 150}).Ratio(); got != 1.5 {
		t.Errorf("Ratio = %v", got)
	}
	for policy, want := range map[string]string{"rs-4-2": "rs-4-2", "rs-4-2/read=all": "rs-4-2", "rep-3": "rep-3"} {
		if got := cairn.UsageCode(policy); got != want {
			t.Errorf("UsageCode(%s) = %s, want %s", policy, got, want)
		}
	}
}

// TestColdTally: an exported cold object counts its bytes times (K+M)/K of
// its policy as stored, on no disk; a staged one counts its warm shards.
func TestColdTally(t *testing.T) {
	m := &cairn.Manifest{Bucket: "b", Key: "k", Version: "v", Policy: "clay-4-2-5/gp=1MiB:2", Size: 1001,
		Cold: &cairn.ColdRef{Group: "g-0", Record: []byte{1}}}
	if got, want := m.Tally(), (cairn.Tally{Objects: 1, Logical: 1001, Stored: 1502}); got != want {
		t.Errorf("cold: %+v, want %+v", got, want)
	}
	if len(m.Stored()) != 0 {
		t.Errorf("cold object on disks: %v", m.Stored())
	}
	tests := []struct {
		policy string
		size   int64
		want   int64
	}{
		{"clay-10-4-13/gp=4MiB:2", 10, 14},
		{"clay-10-4-13/gp=4MiB:2", 11, 16}, // 15.4, rounded up
		{"clay-2-2-3/gp=16KiB:2", 0, 0},
		{"rs-4-2/gp=1MiB:2", 8, 12},
		{"nonsense", 8, 0},
		{"clay-x-2-3/gp=1MiB:2", 8, 0},
	}
	for _, tt := range tests {
		if got := cairn.ColdStored(tt.policy, tt.size); got != tt.want {
			t.Errorf("ColdStored(%q, %d) = %d, want %d", tt.policy, tt.size, got, tt.want)
		}
	}
}
