package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/director"
	"cairn/node/lstor"
)

func TestSplitLstor(t *testing.T) {
	for spec, want := range map[string][2]string{
		"/d1":                       {"/d1", ""},
		"/d1,lstor=/l1":             {"/d1", "/l1"},
		"/d1,bw=1MiB,lstor=/l1":     {"/d1,bw=1MiB", "/l1"},
		"/d1,lstor=/l1,lat=2ms":     {"/d1,lat=2ms", "/l1"},
		"/data/disk1,lstor=/nv/d1/": {"/data/disk1", "/nv/d1/"},
	} {
		rest, l, err := splitLstor(spec)
		if err != nil || rest != want[0] || l != want[1] {
			t.Errorf("splitLstor(%q) = %q, %q, %v; want %q, %q", spec, rest, l, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"/d1,lstor=", "/d1,lstor=/l,lstor=/m", "/d1,lstor=/d1", "/d1,lstor=/d1/l", "/d1/x,lstor=/d1"} {
		if _, _, err := splitLstor(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("splitLstor(%q): %v, want ErrUsage", bad, err)
		}
	}
}

// A raidp object (no shards) does not stop taking a disk out: disk
// commands count shards, and raidp objects are the RAIDP group's.
func TestDiskOutSkipsRAIDPObjects(t *testing.T) {
	ctx := context.Background()
	st, _ := diskCluster(t)
	m := &cairn.Manifest{Bucket: "bkt", Key: "warm", Version: strings.Repeat("b", 32), Size: 3, Policy: cairn.RAIDPPolicy,
		RAIDP: &cairn.RAIDPLayout{Group: "warm", Generation: 1, Spans: []cairn.RAIDPSpan{
			{Superchunk: 0, Length: 3, CRCs: []uint32{7}, Disks: [2]cairn.DiskID{"a", "b"}}}}}
	if err := st.CommitManifest(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	disks, err := st.Disks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := diskCommand(ctx, st, director.OpOut, string(disks[0].ID), now, &bytes.Buffer{}); err != nil {
		t.Fatalf("disk out with a raidp object in the cluster: %v", err)
	}
}

// TestDiskSpecLstorSamePath: through the command line itself (Run, as
// cmd/cairn calls it), `cairn node` and `cairn server` refuse a disk whose
// Lstor is its own path, inside it or containing it — a usage error
// naming lstor.ErrSamePath, before any metadata store is dialled — and
// warn when a separate Lstor is on the disk's file system.
func TestDiskSpecLstorSamePath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk1")
	for _, spec := range []string{disk + ",lstor=" + disk, disk + ",lstor=" + disk + "/lstor", disk + "/sub,lstor=" + disk} {
		for _, args := range [][]string{
			{"node", "--id", "n1", "--meta", "http://127.0.0.1:1", "--secret-file", filepath.Join(dir, "none"), "--disk", spec},
			{"server", "--data", filepath.Join(dir, "srv"), "--disk", spec},
		} {
			var out bytes.Buffer
			err := Run(ctx, args, &out, &out)
			if !errors.Is(err, ErrUsage) || !errors.Is(err, lstor.ErrSamePath) || !strings.Contains(err.Error(), "must not share the disk's path") {
				t.Errorf("cairn %s --disk %s: %v, want a usage error with lstor.ErrSamePath", args[0], spec, err)
			}
		}
	}
	var warn bytes.Buffer
	if err := checkDiskSpecs([]string{disk + ",lstor=" + filepath.Join(dir, "lstor", "disk1"), filepath.Join(dir, "disk2")}, &warn); err != nil {
		t.Fatal(err)
	}
	if got := warn.String(); strings.Count(got, "warning: ") != 1 || !strings.Contains(got, "same file system") {
		t.Errorf("an Lstor on the disk's file system: warnings %q, want one", got)
	}
}
