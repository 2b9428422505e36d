package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
)

// racingStore runs race before the first UpdateManifest of key: an
// overwrite that lands while compaction copies the object.
type racingStore struct {
	*mem.Store
	key  string
	race func()
}

func (s *racingStore) UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error {
	if m.Key == s.key && s.race != nil {
		r := s.race
		s.race = nil
		r()
	}
	return s.Store.UpdateManifest(ctx, m, prev)
}

// TestRAIDPCompact fills superchunks with raidp objects on real node
// servers, deletes most of those in the first superchunk, and compacts:
// the live objects there move out (one of them overwritten while it is
// copied: the overwrite wins, the copy is dead), the superchunk is zeroed
// on both replicas and handed out again from offset 0, every live object
// reads back byte-exact, every Lstor is the XOR of its slots, and the
// dead ranges queued before the reclaim are dropped, not zeroed into the
// new objects.
func TestRAIDPCompact(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	mstore, nodes, disks := raidpCluster(t, 6, size)
	store := &racingStore{Store: mstore, key: "k3"}
	c := client.New(store, nodes.Client, client.Config{})
	live := map[string][]byte{}
	inFirst := map[string]bool{}
	for i := range 24 {
		key := fmt.Sprintf("k%d", i)
		p := randomBytes(90_000, uint64(i))
		m, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))})
		if err != nil {
			t.Fatal(err)
		}
		live[key] = p
		if m.RAIDP.Spans[0].Superchunk == 0 {
			inFirst[key] = true
		}
	}
	// Six disks: three superchunks open at once, filled in turn, so
	// superchunk 0 holds k0, k3, … k21. Keep k0 and k3 (overwritten during
	// the move); delete the rest of superchunk 0.
	if len(inFirst) != 8 || !inFirst["k0"] || !inFirst["k3"] {
		t.Fatalf("superchunk 0 holds %v, want every third object from k0", inFirst)
	}
	for key := range inFirst {
		if key == "k0" || key == "k3" {
			continue
		}
		if err := c.Delete(ctx, "warm", key); err != nil {
			t.Fatal(err)
		}
		delete(live, key)
	}
	before := deadQueue(t, c)
	if len(before) == 0 {
		t.Fatal("no dead range queued")
	}
	racer := randomBytes(5000, 77)
	store.race = func() {
		if _, err := c.Put(ctx, "warm", "k3", bytes.NewReader(racer), client.PutOptions{Size: int64(len(racer))}); err != nil {
			t.Error(err)
		}
		live["k3"] = racer
	}
	st, err := c.CompactRAIDP(ctx, client.DefaultRAIDPCompactDead, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Candidates, []int{0}) || !slices.Equal(st.Reclaimed, []int{0}) || st.Moved != 1 || st.Lost != 1 {
		t.Fatalf("compaction: %+v; want superchunk 0 emptied and reclaimed, 1 object moved, 1 lost to an overwrite", st)
	}
	a := raidpAlloc(t, mstore)
	if a.End[0] != 0 || a.Dead[0] != 0 || a.Epoch[0] != 1 || len(a.Compacting) != 0 || len(a.Zeroing) != 0 {
		t.Errorf("allocation after the reclaim: end %d dead %d epoch %d compacting %v zeroing %v", a.End[0], a.Dead[0], a.Epoch[0], a.Compacting, a.Zeroing)
	}
	for key := range live {
		m, _ := c.Stat(ctx, "warm", key)
		for _, sp := range m.RAIDP.Spans {
			if sp.Superchunk == 0 {
				t.Errorf("%s still has a span in superchunk 0: %+v", key, sp)
			}
		}
	}
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s0 := g.Layout.Superchunks[0]
	whole := cairn.RAIDPSpan{Superchunk: 0, Length: size}
	for j, r := range s0.Replicas {
		whole.Disks[j], whole.Slots[j] = cairn.DiskID(g.Disks[r.Disk].ID), r.Slot
	}
	if r := replicaBytes(t, nodes, whole); !isZero(r[0]) || !isZero(r[1]) {
		t.Error("the reclaimed superchunk is not zero on both replicas")
	}
	for _, r := range deadQueue(t, c) {
		if r.Superchunk == 0 {
			t.Errorf("a dead range of the reclaimed superchunk is still queued: %+v", r)
		}
	}
	getAll(t, c, live, "after compaction")
	checkParity(t, nodes, disks, size, 4)

	// New objects go into superchunk 0 from offset 0 again (open again
	// beside the two others: at most the third PUT lands there); the
	// zeroer then works the queue (the moved object's old span, the lost
	// copy) without touching them.
	for i := 0; ; i++ {
		key := fmt.Sprintf("fresh%d", i)
		fresh := randomBytes(200_000, uint64(88+i))
		m, err := c.Put(ctx, "warm", key, bytes.NewReader(fresh), client.PutOptions{Size: int64(len(fresh))})
		if err != nil {
			t.Fatal(err)
		}
		live[key] = fresh
		if sp := m.RAIDP.Spans[0]; sp.Superchunk == 0 {
			if sp.Offset != 0 {
				t.Errorf("a put after the reclaim went to superchunk 0 at %d, want 0", sp.Offset)
			}
			break
		}
		if i == 2 {
			t.Fatal("three puts after the reclaim, none in superchunk 0")
		}
	}
	// A range of superchunk 0 queued before the reclaim (as a delete that
	// read the epoch before it would queue it) is stale: dropped, not
	// zeroed into the new object.
	if err := mstore.UpdateRAIDP(ctx, "dead/"+client.DefaultRAIDPGroup, func(old []byte) ([]byte, error) {
		var q client.RAIDPDeadQueue
		if err := json.Unmarshal(old, &q); err != nil {
			return nil, err
		}
		q.Ranges = append(q.Ranges, client.RAIDPDeadRange{Superchunk: 0, Offset: 0, Length: 100_000, Since: time.Now(), Epoch: 0})
		return json.Marshal(q)
	}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.ZeroDeadRAIDP(ctx, time.Now().Add(time.Hour), 0, 1000); err != nil || st.Stale != 1 {
		t.Fatalf("zeroer: %+v, %v; want 1 stale range dropped", st, err)
	}
	if q := deadQueue(t, c); len(q) != 0 {
		t.Errorf("%d dead ranges left", len(q))
	}
	getAll(t, c, live, "after zeroing")
	checkParity(t, nodes, disks, size, 4)
	// Nothing left to compact below the threshold; a superchunk left
	// closed to PUTs by a compaction that died is reopened.
	if err := mstore.UpdateRAIDP(ctx, "alloc/"+client.DefaultRAIDPGroup, func(old []byte) ([]byte, error) {
		var a client.RAIDPAlloc
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
		a.Compacting = []int{2}
		return json.Marshal(a)
	}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.CompactRAIDP(ctx, client.DefaultRAIDPCompactDead, 4); err != nil || len(st.Candidates) != 0 {
		t.Errorf("a second compaction: %+v, %v", st, err)
	}
	if a := raidpAlloc(t, mstore); len(a.Compacting) != 0 {
		t.Errorf("superchunks %v stay closed to PUTs", a.Compacting)
	}
}
