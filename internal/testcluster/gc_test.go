package testcluster_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/internal/testcluster"
)

// TestOrphansCollected is issue 14's "after GC's grace period 0 orphan
// shards" on a real server: the files of overwritten and deleted objects
// (left by a cleanup grace longer than the test) and a shard planted for
// an object that never existed are removed by the scrub passes once older
// than --gc-grace; then every shard file on the disks is named by a
// committed manifest, every object reads back byte-exact, and `cairn
// admin gc status` counts what was removed.
func TestOrphansCollected(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and waits for its scrub passes")
	}
	s := testcluster.StartServer(t, "", "--scrub-interval", "1s", "--scrub-rate", "1GiB", "--gc-grace", "4s",
		"--cleanup-grace", "1h")
	d := serverDirect(t, s)
	ctx := t.Context()
	s.CLI(t, "mb", "gcb")
	s.CLI(t, "mb", "gclt", "--policy", "lt-16-2") // fountain-coded blocks are matched by stripe and block ID
	rng := rand.New(rand.NewPCG(14, 14))
	data := putRandom(t, d, "gcb", 6, func() int { return 100<<10 + rng.IntN(300<<10) }, rng)
	coded := putRandom(t, d, "gclt", 2, func() int { return 300<<10 + rng.IntN(300<<10) }, rng)
	var orphans []string // "<disk dir>/<name>"
	filesOf := func(m *cairn.Manifest) {
		for _, f := range m.Files() {
			orphans = append(orphans, diskDir(f.Disk)+"/"+f.Name)
		}
	}
	for _, key := range []string{"obj/001", "obj/004"} { // overwritten
		old, err := d.meta.Manifest(ctx, "gcb", key)
		if err != nil {
			t.Fatal(err)
		}
		filesOf(old)
		b := make([]byte, 50<<10)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if _, err := d.data.Put(ctx, "gcb", key, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		data[key] = b
	}
	gone, err := d.meta.DeleteManifest(ctx, "gcb", "obj/002", "") // deleted
	if err != nil {
		t.Fatal(err)
	}
	filesOf(gone)
	delete(data, "obj/002")
	// A shard of an object that was never committed (a PUT that died
	// before its commit and before its cleanup).
	planted := cairn.ShardIdentity{Bucket: "gcb", Key: "never", Version: "0123456789abcdef0123456789abcdef", Row: 1, Policy: "rs-4-2", BlockSize: 1 << 20}
	ident, err := planted.Encode()
	if err != nil {
		t.Fatal(err)
	}
	someDisk := gone.Shards[0].Disk
	if _, err := d.nodes.PutShardIdentified(ctx, someDisk, planted.Name(), ident, bytes.NewReader([]byte("orphan content"))); err != nil {
		t.Fatal(err)
	}
	orphans = append(orphans, diskDir(someDisk)+"/"+planted.Name())
	for _, o := range orphans {
		if !shardFileExists(t, s.Data, o) {
			t.Fatalf("orphan %s is not on disk to begin with", o)
		}
	}

	waitFor(t, 2*time.Minute, "every orphan removed", func() bool {
		for _, o := range orphans {
			if shardFileExists(t, s.Data, o) {
				return false
			}
		}
		return true
	})
	// 0 orphans: every shard file left is one a committed manifest names.
	named := map[string]bool{}
	for _, b := range []string{"gcb", "gclt"} {
		ms, _, err := d.meta.ListManifests(ctx, b, "", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			for _, f := range m.Files() {
				named[diskDir(f.Disk)+"/"+f.Name] = true
			}
		}
	}
	ids := identities(t, s.Data)
	for file := range ids {
		if !named[file] {
			t.Errorf("shard file %s is left, and no manifest names it", file)
		}
	}
	for file := range named {
		if _, ok := ids[file]; !ok {
			t.Errorf("shard file %s, which a manifest names, is gone", file)
		}
	}
	for key, want := range coded {
		data["gclt/"+key] = want
	}
	for bk, want := range data {
		bucket, key := "gcb", bk
		if b, k, ok := strings.Cut(bk, "/"); ok && b == "gclt" {
			bucket, key = b, k
		}
		_, rc, err := d.data.Get(ctx, bucket, key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s/%s reads back %d bytes (%v), want %d byte-exact", bucket, key, len(got), err, len(want))
		}
	}
	var st struct {
		Collected int64 `json:"collected"`
	}
	out := s.CLI(t, "admin", "gc", "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Collected < int64(len(orphans)) {
		t.Fatalf("gc status says %d collected (%v), %d orphans were removed:\n%s", st.Collected, err, len(orphans), out)
	}
	t.Logf("admin gc status:\n%s", s.CLI(t, "admin", "gc", "status"))
}

// diskDir is the directory of a disk of a `cairn server` (node1/disk3 →
// disk3).
func diskDir(d cairn.DiskID) string { return filepath.Base(string(d)) }

// shardFileExists says whether "<disk dir>/<name>" is a shard file under
// a server's data directory.
func shardFileExists(t *testing.T, data, file string) bool {
	t.Helper()
	dir, name := filepath.Split(file)
	_, err := os.Stat(filepath.Join(data, dir, "shards", name[:2], name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}
