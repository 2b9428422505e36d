package cairn_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
)

func slotsOf(code string) (int, error) {
	switch code {
	case "rs-2-1":
		return 3, nil
	case "rep-3":
		return 3, nil
	}
	return 0, fmt.Errorf("unknown code %q", code)
}

// TestRebuildManifests: shards found on disks become one manifest per
// key — the newest complete candidate — with every shard in its slot (a
// spare row in the slot of a missing row), and the rest is explained.
func TestRebuildManifests(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ver := func(n int) string { return fmt.Sprintf("%032x", n) }
	var found []cairn.FoundShard
	add := func(id cairn.ShardIdentity, rows []int, at time.Time) {
		for _, r := range rows {
			id.Row = r
			found = append(found, cairn.FoundShard{Disk: cairn.DiskID(fmt.Sprintf("n%d/d1", r)), ID: id, Size: 100, CRC: uint32(r + 1), Ident: 150, Written: at})
		}
	}
	obj := func(key string, v int) cairn.ShardIdentity {
		return cairn.ShardIdentity{Bucket: "bkt", Key: key, Version: ver(v), Policy: "rs-2-1", BlockSize: 100, PG: 3, Size: 150, ContentType: "text/plain"}
	}
	add(obj("a", 1), []int{0, 1, 2}, t0)                // overwritten by version 2
	add(obj("a", 2), []int{0, 1, 2}, t0.Add(time.Hour)) // the current one
	add(obj("spare", 3), []int{0, 2, 4}, t0)            // row 1 straggled: spare row 4 took its slot
	add(obj("broken", 4), []int{0}, t0)                 // two rows lost
	unknown := obj("unsized", 5)
	unknown.Size = -1
	add(unknown, []int{0, 1, 2}, t0)
	small := obj("small", 6)
	small.Code, small.Size = "rep-3", 10
	add(small, []int{0, 1, 2}, t0)
	part := func(n, v int) cairn.ShardIdentity {
		return cairn.ShardIdentity{Bucket: "bkt", Key: "mp", Version: ver(v), Part: n, Upload: ver(99), Policy: "rs-2-1", BlockSize: 100, Size: 150}
	}
	add(part(1, 10), []int{0, 1, 2}, t0)
	add(part(2, 11), []int{0, 1, 2}, t0)
	add(part(2, 12), []int{0, 1, 2}, t0.Add(time.Minute)) // part 2 uploaded again

	lt := obj("fountain", 20)
	lt.Object, lt.Version = ver(21), ver(22)
	add(lt, []int{0, 5, 9}, t0)

	r := cairn.RebuildManifests(found, slotsOf)
	var got []string
	for _, m := range r.Manifests {
		if err := m.Validate(); err != nil {
			t.Errorf("%s/%s: %v", m.Bucket, m.Key, err)
		}
		got = append(got, fmt.Sprintf("%s@%s", m.Key, m.Version[28:]))
	}
	if want := "a@0002 mp@0063 small@0006 spare@0003"; strings.Join(got, " ") != want {
		t.Fatalf("rebuilt %v, want %s", got, want)
	}
	a := r.Manifests[0]
	if a.Size != 150 || a.ContentType != "text/plain" || a.Policy != "rs-2-1" || a.PG != 3 || !a.Created.Equal(t0.Add(time.Hour)) ||
		a.Shards[1] != (cairn.ShardLoc{Disk: "n1/d1", Size: 100, CRC: 2, Ident: 150}) {
		t.Errorf("manifest of a: %+v", a)
	}
	if sp := r.Manifests[3]; sp.Shards[1].Row != 4 || sp.Shards[1].Disk != "n4/d1" || sp.Shards[2].Row != 0 {
		t.Errorf("spare row: %+v", sp.Shards)
	}
	if mp := r.Manifests[1]; mp.Upload != ver(99) || len(mp.Parts) != 2 || mp.Parts[1].Version != ver(12) || mp.Size != 300 {
		t.Errorf("multipart: %+v", mp)
	}
	if r.Manifests[2].Code != "rep-3" || r.Manifests[2].Size != 10 {
		t.Errorf("small: %+v", r.Manifests[2])
	}
	skipped := strings.Join(r.Skipped, "\n")
	for _, want := range []string{"a version " + ver(1) + ": older than", "broken version " + ver(4) + ": no file of rows [1 2]",
		"did not record the size", "fountain version " + ver(21) + ": fountain-coded blocks are not rebuilt", "part 2 version " + ver(11) + ": part 2 has a newer version"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped does not say %q:\n%s", want, skipped)
		}
	}
	again := cairn.RebuildManifests(found, slotsOf)
	a1, _ := json.Marshal(r)
	a2, _ := json.Marshal(again)
	if string(a1) != string(a2) {
		t.Error("not deterministic")
	}
}
