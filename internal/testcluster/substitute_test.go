package testcluster_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/internal/testcluster"
	"cairn/meta"
)

// TestSubstitutedShardHealed is issue 15's end-to-end integrity test on
// real processes: shard 0's file of one object is replaced on disk by the
// same shard's file of another object of the same size — a well-formed
// file, valid block CRCs and footer, that only the manifest's CRC tells
// apart. A GET (the CLI's) returns the right bytes and records the damage,
// the director repairs the shard onto another disk, and the object reads
// back without it.
func TestSubstitutedShardHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 9 processes")
	}
	const nodes = 8 // rs-4-2 with disks outside the stripe: the repair moves the shard
	c := testcluster.Start(t, testcluster.Config{Nodes: nodes, NodeArgs: []string{
		"--repair-scan", "1s", "--repair-unit", "64KiB", "--scrub-interval", "1h",
		"--cleanup-grace", "0s", "--cleanup-every", "1s"}})
	d := openDirect(t, c)
	ctx := t.Context()
	// read=k+0: every read asks for the data shards only, so the GET
	// needs shard 0 and always sees (and reports) its failure; with a
	// spare request it may decode without it and cancel it unreported.
	c.CLI(t, "mb", "sub", "--policy", "rs-4-2/read=k+0")
	rng := rand.New(rand.NewPCG(15, 15))
	data := putRandom(t, d, "sub", 2, func() int { return 200 << 10 }, rng)
	const victim, donor = "obj/000", "obj/001"
	man, err := d.meta.Manifest(ctx, "sub", victim)
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.meta.Manifest(ctx, "sub", donor)
	if err != nil {
		t.Fatal(err)
	}
	f := cairn.ShardFile{Disk: man.Shards[0].Disk, Name: cairn.ShardName(man.Version, cairn.RowOf(man.Shards, 0))}
	sub, err := os.ReadFile(shardPath(t, c, other.Shards[0].Disk, cairn.ShardName(other.Version, cairn.RowOf(other.Shards, 0))))
	if err != nil {
		t.Fatal(err)
	}
	path := shardPath(t, c, f.Disk, f.Name)
	if err := os.WriteFile(path+".tmp", sub, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "got")
	c.CLI(t, "get", "sub/"+victim, dst)
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data[victim]) {
		t.Fatalf("GET over a substituted shard returned %d bytes (%v), want %d byte-exact", len(got), err, len(data[victim]))
	}
	waitFor(t, 2*time.Minute, "the substituted shard recorded and repaired", func() bool {
		ts, err := meta.AllRepairTasks(ctx, d.meta)
		if err != nil || len(ts) > 0 {
			return false
		}
		cur, err := d.meta.Manifest(ctx, "sub", victim)
		return err == nil && cur.Shards[0].Disk != f.Disk && cur.Shards[0].CRC == man.Shards[0].CRC
	})
	p, err := d.meta.RepairProgress(ctx)
	if err != nil || p.DamageQueued < 1 {
		t.Fatalf("repair progress %+v (%v): no damage record was queued", p, err)
	}
	// The object reads back, no shard reported: every one is the manifest's.
	var damaged []string
	d2 := newDirect(t, c.MetaEndpoints(), c.Secret(), client.Config{BlockSize: 64 << 10,
		OnDamage: func(dm client.Damage) { damaged = append(damaged, dm.Name) }})
	for key, want := range data {
		_, rc, err := d2.data.Get(ctx, "sub", key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after the repair %s reads back %d bytes (%v)", key, len(got), err)
		}
	}
	if len(damaged) > 0 {
		t.Fatalf("after the repair reads reported damage: %v", damaged)
	}
}
