package client_test

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"cairn"
	"cairn/client"
	"cairn/repair/raidprun"
)

// TestRAIDPEveryPairOf8 is issue 17's "any two of N=8 disks removed":
// for each of the 28 pairs of a group of 8 disks on real node servers
// (small superchunks), a group filled with objects loses both disks
// (their data deleted, their Lstors kept, as a replacement does) and
// RecoverRAIDP rebuilds what they shared, if anything, and re-mirrors the
// rest. After it every object reads back byte-exact, the group's layout
// keeps 1-mirroring and 1-sharing (raidp.Layout.Check) with nothing left
// on the lost disks, the replicas of every superchunk agree, and every
// live disk's Lstor is the XOR of its slots.
func TestRAIDPEveryPairOf8(t *testing.T) {
	const n, size = 8, 256 << 10
	pair := 0
	for a := range n {
		for b := a + 1; b < n; b++ {
			if pair++; testing.Short() && pair%4 != 1 {
				continue // -short: 7 of the 28 pairs (the whole set takes half a minute)
			}
			t.Run(fmt.Sprintf("node%d+node%d", a+1, b+1), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				meta, nodes, disks := raidpCluster(t, n, size)
				c := client.New(meta, nodes.Client, client.Config{})
				objects := map[string][]byte{}
				// 8 disks, 4 slots: rows 3, 12 superchunks (3 MiB); fill
				// 90% of it, objects spanning superchunks.
				for i := 0; len(objects)*size*3/4 < 12*size*9/10; i++ {
					p := randomBytes(size*3/4+i*1013, uint64(a*100+b*10+i))
					key := fmt.Sprintf("o%d", i)
					if _, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))}); err != nil {
						t.Fatalf("put %s: %v", key, err)
					}
					objects[key] = p
				}
				g, err := c.RAIDPGroup(ctx)
				if err != nil {
					t.Fatal(err)
				}
				lost := []cairn.DiskID{disks[a], disks[b]}
				for _, d := range lost {
					nodes.Replace(t, d)
				}
				after, err := c.RecoverRAIDP(ctx, lost)
				if err != nil {
					t.Fatalf("recover %v: %v", lost, err)
				}
				if err := after.Layout.Check(); err != nil {
					t.Fatalf("layout after recovering %v: %v", lost, err)
				}
				if after.Generation != g.Generation+1 || len(after.Out) != 2 {
					t.Fatalf("group after recovering %v: generation %d, out %v", lost, after.Generation, after.Out)
				}
				live := map[int]raidprun.Disk{}
				for i, d := range after.Disks {
					if slices.Contains(after.Out, i) {
						if got := after.Layout.OnDisk(i); len(got) != 0 {
							t.Fatalf("lost disk %s still holds superchunks %v", d.ID, got)
						}
						continue
					}
					live[i] = raidprun.Remote(ctx, nodes.Client, cairn.DiskID(d.ID))
				}
				getAll(t, c, objects, fmt.Sprintf("%v lost and recovered", lost))
				div, err := raidprun.Verify(ctx, after.Layout, live, raidprun.Config{Size: size})
				if err != nil || len(div) > 0 {
					t.Fatalf("replicas after the recovery: %v, %v", div, err)
				}
				for i, d := range live {
					checkLstor(t, d, after.Layout.Slots, size, after.Disks[i].ID)
				}
			})
		}
	}
}

// checkLstor fails the test unless disk's Lstor parity is the XOR of its
// slots.
func checkLstor(t *testing.T, d raidprun.Disk, slots int, size int64, name string) {
	t.Helper()
	want, buf, par := make([]byte, size), make([]byte, size), make([]byte, size)
	for s := range slots {
		if err := d.ReadAt(s, buf, 0); err != nil {
			t.Fatalf("%s slot %d: %v", name, s, err)
		}
		subtle.XORBytes(want, want, buf)
	}
	if err := d.Parity(par, 0); err != nil {
		t.Fatalf("%s parity: %v", name, err)
	}
	if !bytes.Equal(par, want) {
		i := 0
		for par[i] == want[i] {
			i++
		}
		t.Fatalf("%s: the Lstor differs from the XOR of the slots from byte %d", name, i)
	}
}

// TestRAIDPRecoverDiedBeforeUndivert: a recovery that stored the new
// group but died before it cleared its diverts (found by the RAIDP crash
// test, internal/testcluster/raidpcrash, CAIRN_RAIDP_CRASH_SEED=7, the
// recover process killed at that point) must not keep PUTs off those
// superchunks for good: PUTs ignore diverts of an older generation, and
// running the recovery again clears them from the record.
func TestRAIDPRecoverDiedBeforeUndivert(t *testing.T) {
	ctx := context.Background()
	const size = 256 << 10
	meta, nodes, disks := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{})
	put := func(key string) error {
		p := randomBytes(size/2, 9)
		_, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))})
		return err
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	nodes.Stop(disks[0])
	g, err := c.RecoverRAIDP(ctx, disks[:1])
	if err != nil {
		t.Fatal(err)
	}
	// The crash: every superchunk diverted, as of the generation the
	// recovery planned from.
	var all []int
	for _, s := range g.Layout.Superchunks {
		all = append(all, s.ID)
	}
	stale := func(old []byte) ([]byte, error) {
		var a client.RAIDPAlloc
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
		a.Divert, a.DivertGeneration = all, g.Generation-1
		return json.Marshal(a)
	}
	if err := meta.UpdateRAIDP(ctx, "alloc/warm", stale); err != nil {
		t.Fatal(err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("a PUT with the stale diverts: %v", err)
	}
	if _, err := c.RecoverRAIDP(ctx, disks[:1]); err != nil {
		t.Fatal(err)
	}
	b, err := meta.RAIDP(ctx, "alloc/warm")
	if err != nil {
		t.Fatal(err)
	}
	var a client.RAIDPAlloc
	if err := json.Unmarshal(b, &a); err != nil || len(a.Divert) != 0 || a.DivertGeneration != 0 {
		t.Fatalf("after running the recovery again the record diverts %v (generation %d), %v", a.Divert, a.DivertGeneration, err)
	}
	// A divert of the current generation (a recovery running) holds.
	if err := meta.UpdateRAIDP(ctx, "alloc/warm", func(old []byte) ([]byte, error) {
		var a client.RAIDPAlloc
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
		a.Divert, a.DivertGeneration = all, g.Generation
		return json.Marshal(a)
	}); err != nil {
		t.Fatal(err)
	}
	if err := put("during"); !errors.Is(err, cairn.ErrNoSpace) {
		t.Fatalf("a PUT while every superchunk is diverted: %v, want ErrNoSpace", err)
	}
}
