package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
	"cairn/node/nodetest"
)

// TestGetCatchesSubstitutedShard replaces a shard file on a real node with
// a well-formed shard of other content — the same shard of another object
// of the same size, stored by the node with valid block CRCs and footer —
// and checks that GET notices (the footer's CRC is not the manifest's),
// reads around it, returns the right bytes for whole and ranged reads and
// reports the damage.
func TestGetCatchesSubstitutedShard(t *testing.T) {
	ctx := context.Background()
	meta, nodes := mem.New(), nodetest.New()
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("node%d", i)
		disk := nodes.Start(t, id)
		if err := meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "nodetest"}); err != nil {
			t.Fatal(err)
		}
		if err := meta.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	var damage []client.Damage
	// δ = 0: every read needs shard 0, so its failure is always seen (with
	// δ > 0 a read that decodes without it may cancel it unreported).
	c := client.New(meta, nodes.Client, client.Config{BlockSize: 1024, ReadExtra: -1,
		OnDamage: func(d client.Damage) { damage = append(damage, d) }})
	put := func(key string, seed uint64) ([]byte, *cairn.Manifest) {
		data := make([]byte, 50_000)
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		m, err := c.Put(ctx, "bkt", key, bytes.NewReader(data), client.PutOptions{Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		return data, m
	}
	data, m := put("a", 1)
	_, other := put("b", 2)

	// Shard 0 (a data row: every read asks for it first) of "a" becomes
	// shard 0 of "b".
	const victim = 0
	rc, err := nodes.Client.GetShard(ctx, other.Shards[victim].Disk, cairn.ShardName(other.Version, cairn.RowOf(other.Shards, victim)), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	name := cairn.ShardName(m.Version, cairn.RowOf(m.Shards, victim))
	info, err := nodes.Client.PutShard(ctx, m.Shards[victim].Disk, name, bytes.NewReader(sub))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != m.Shards[victim].Size || info.CRC == m.Shards[victim].CRC {
		t.Fatalf("substitute holds %d bytes with CRC %08x; want %d bytes with another CRC than %08x", info.Size, info.CRC, m.Shards[victim].Size, m.Shards[victim].CRC)
	}

	for _, r := range []struct{ off, n int64 }{{0, -1}, {100, 200}, {30_000, 5_000}} {
		damage = nil
		_, rc, err := c.Get(ctx, "bkt", "a", r.off, r.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		end := int64(len(data))
		if r.n >= 0 {
			end = r.off + r.n
		}
		if err != nil || !bytes.Equal(got, data[r.off:end]) {
			t.Fatalf("GET [%d,%d) with a substituted shard: %d bytes, err %v", r.off, end, len(got), err)
		}
		if len(damage) != 1 || damage[0].Shard != victim || damage[0].Name != name || damage[0].Disk != m.Shards[victim].Disk || !errors.Is(damage[0].Err, cairn.ErrCorrupt) {
			t.Fatalf("GET [%d,%d): damage reported %+v, want shard %d (%s) corrupt", r.off, end, damage, victim, name)
		}
	}
}
