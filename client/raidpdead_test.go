package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
	"cairn/node/nodetest"
)

// checkParity fails the test unless every disk's Lstor is the XOR of its
// slots.
func checkParity(t *testing.T, nodes *nodetest.Nodes, disks []cairn.DiskID, size int64, slots int) {
	t.Helper()
	ctx := context.Background()
	for _, d := range disks {
		xor := make([]byte, size)
		slot := make([]byte, size)
		for s := range slots {
			for o := int64(0); o < size; o += 1 << 20 {
				if err := nodes.Client.ReadRAIDP(ctx, d, s, slot[o:min(size, o+1<<20)], o); err != nil {
					t.Fatal(err)
				}
			}
			for i := range xor {
				xor[i] ^= slot[i]
			}
		}
		par := make([]byte, size)
		for o := int64(0); o < size; o += 1 << 20 {
			if err := nodes.Client.ReadLstor(ctx, d, par[o:min(size, o+1<<20)], o); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(par, xor) {
			t.Errorf("disk %s: the Lstor is not the XOR of its slots", d)
		}
	}
}

// replicaBytes reads span sp from both of its replicas.
func replicaBytes(t *testing.T, nodes *nodetest.Nodes, sp cairn.RAIDPSpan) [2][]byte {
	t.Helper()
	var out [2][]byte
	for j := range 2 {
		out[j] = make([]byte, sp.Length)
		if err := nodes.Client.ReadRAIDP(context.Background(), sp.Disks[j], sp.Slots[j], out[j], sp.Offset); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func isZero(p []byte) bool { return bytes.Equal(p, make([]byte, len(p))) }

// deadQueue returns the group's queue of dead ranges.
func deadQueue(t *testing.T, c *client.Client) []client.RAIDPDeadRange {
	t.Helper()
	q, err := c.RAIDPDeadBacklog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return q.Ranges
}

// TestRAIDPDeletes deletes and overwrites raidp objects on real node
// servers with each delete variant: lazy deletes leave their bytes on
// both replicas, queued, until the zeroer runs after the grace period;
// online deletes zero both replicas before they return. Either way every
// freed span ends zero on both replicas, every Lstor is the XOR of its
// slots, and every live object reads back byte-exact.
func TestRAIDPDeletes(t *testing.T) {
	for _, mode := range []string{client.RAIDPLazy, client.RAIDPOnline} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			const size = 1 << 20
			meta, nodes, disks := raidpCluster(t, 6, size)
			c := client.New(meta, nodes.Client, client.Config{RAIDPDeletes: mode})
			live := map[string][]byte{}
			var freed []cairn.RAIDPSpan
			for i := range 12 {
				key := fmt.Sprintf("k%d", i)
				p := randomBytes(50_000+i*37_000, uint64(i))
				if _, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))}); err != nil {
					t.Fatal(err)
				}
				live[key] = p
			}
			for i := 0; i < 12; i += 3 { // deletes
				key := fmt.Sprintf("k%d", i)
				m, _ := c.Stat(ctx, "warm", key)
				freed = append(freed, m.RAIDP.Spans...)
				if err := c.Delete(ctx, "warm", key); err != nil {
					t.Fatal(err)
				}
				delete(live, key)
			}
			for _, i := range []int{1, 4, 10} { // overwrites free the old version
				key := fmt.Sprintf("k%d", i)
				m, _ := c.Stat(ctx, "warm", key)
				freed = append(freed, m.RAIDP.Spans...)
				p := randomBytes(20_000, uint64(100+i))
				if _, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))}); err != nil {
					t.Fatal(err)
				}
				live[key] = p
			}
			q := deadQueue(t, c)
			switch mode {
			case client.RAIDPLazy:
				if len(q) != len(freed) {
					t.Fatalf("%d dead ranges queued, want %d", len(q), len(freed))
				}
				for _, sp := range freed {
					if r := replicaBytes(t, nodes, sp); isZero(r[0]) || !bytes.Equal(r[0], r[1]) {
						t.Fatalf("a lazily deleted span %+v is zeroed or its replicas differ before the zeroer ran", sp)
					}
				}
				// Within the grace period nothing is zeroed.
				if st, err := c.ZeroDeadRAIDP(ctx, time.Now(), time.Hour, 100); err != nil || st.Zeroed != 0 || st.Waiting != len(freed) {
					t.Fatalf("zeroer within the grace: %+v, %v", st, err)
				}
				getAll(t, c, live, "before zeroing")
				st, err := c.ZeroDeadRAIDP(ctx, time.Now().Add(time.Minute), time.Minute, 100)
				if err != nil || st.Zeroed != len(freed) || st.Waiting != 0 {
					t.Fatalf("zeroer: %+v, %v; want %d ranges zeroed", st, err, len(freed))
				}
			case client.RAIDPOnline:
				if len(q) != 0 {
					t.Fatalf("online deletes queued %d ranges", len(q))
				}
			}
			if q := deadQueue(t, c); len(q) != 0 {
				t.Errorf("%d dead ranges left queued", len(q))
			}
			for _, sp := range freed {
				if r := replicaBytes(t, nodes, sp); !isZero(r[0]) || !isZero(r[1]) {
					t.Errorf("freed span %+v not zero on both replicas", sp)
				}
			}
			checkParity(t, nodes, disks, size, 4)
			getAll(t, c, live, "after zeroing")
			var dead int64
			for _, d := range raidpAlloc(t, meta).Dead {
				dead += d
			}
			var want int64
			for _, sp := range freed {
				want += sp.Length
			}
			if dead != want {
				t.Errorf("dead bytes counted %d, want %d", dead, want)
			}
		})
	}
}

func raidpAlloc(t *testing.T, meta *mem.Store) client.RAIDPAlloc {
	t.Helper()
	b, err := meta.RAIDP(context.Background(), "alloc/"+client.DefaultRAIDPGroup)
	if err != nil {
		t.Fatal(err)
	}
	var a client.RAIDPAlloc
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRAIDPDeadBacklog: a lazy delete that finds the queue full zeroes
// its ranges online instead (nothing is dropped); ranges of a superchunk a
// recovery diverts, or with a replica on a disk marked down, wait in the
// queue until it is writable again.
func TestRAIDPDeadBacklog(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	meta, nodes, disks := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{RAIDPDeadBacklog: 3})
	var spans []cairn.RAIDPSpan
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		m, err := c.Put(ctx, "warm", key, bytes.NewReader(randomBytes(10_000, uint64(i))), client.PutOptions{Size: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		spans = append(spans, m.RAIDP.Spans[0])
	}
	keep := randomBytes(30_000, 99)
	if _, err := c.Put(ctx, "warm", "keep", bytes.NewReader(keep), client.PutOptions{Size: int64(len(keep))}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := c.Delete(ctx, "warm", fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if q := deadQueue(t, c); len(q) != 3 {
		t.Fatalf("the queue bounded at 3 holds %d ranges", len(q))
	}
	for i, sp := range spans {
		r := replicaBytes(t, nodes, sp)
		if zeroed := isZero(r[0]) && isZero(r[1]); zeroed != (i >= 3) {
			t.Errorf("delete %d (queue full from the 4th): zeroed online %v", i, zeroed)
		}
	}
	// A recovery diverts the first range's superchunk: it waits.
	div := spans[0].Superchunk
	if err := meta.UpdateRAIDP(ctx, "alloc/"+client.DefaultRAIDPGroup, func(old []byte) ([]byte, error) {
		var a client.RAIDPAlloc
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
		a.Divert = append(a.Divert, div)
		return json.Marshal(a)
	}); err != nil {
		t.Fatal(err)
	}
	st, err := c.ZeroDeadRAIDP(ctx, time.Now().Add(time.Hour), time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range deadQueue(t, c) {
		if r.Superchunk != div {
			t.Errorf("range %+v left queued, only superchunk %d is diverted", r, div)
		}
	}
	if st.Waiting == 0 || st.Zeroed+st.Waiting != 3 {
		t.Errorf("zeroer with superchunk %d diverted: %+v", div, st)
	}
	if r := replicaBytes(t, nodes, spans[0]); isZero(r[0]) || !bytes.Equal(r[0], r[1]) {
		t.Error("a range of a diverted superchunk was zeroed")
	}
	if err := meta.UpdateRAIDP(ctx, "alloc/"+client.DefaultRAIDPGroup, func(old []byte) ([]byte, error) {
		var a client.RAIDPAlloc
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, err
		}
		a.Divert = nil
		return json.Marshal(a)
	}); err != nil {
		t.Fatal(err)
	}
	// A replica's disk marked down: its ranges wait too.
	down := spans[0].Disks[1]
	if err := meta.SetDiskState(ctx, down, cairn.DiskDown, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ZeroDeadRAIDP(ctx, time.Now().Add(time.Hour), time.Minute, 100); err != nil {
		t.Fatal(err)
	}
	if len(deadQueue(t, c)) == 0 {
		t.Error("a range with a replica on a disk marked down was zeroed")
	}
	if err := meta.SetDiskState(ctx, down, cairn.DiskUp, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ZeroDeadRAIDP(ctx, time.Now().Add(time.Hour), time.Minute, 100); err != nil {
		t.Fatal(err)
	}
	if q := deadQueue(t, c); len(q) != 0 {
		t.Errorf("%d ranges left after every disk is up again", len(q))
	}
	for _, sp := range spans {
		if r := replicaBytes(t, nodes, sp); !isZero(r[0]) || !isZero(r[1]) {
			t.Errorf("freed span %+v not zero on both replicas", sp)
		}
	}
	checkParity(t, nodes, disks, size, 4)
	getAll(t, c, map[string][]byte{"keep": keep}, "after zeroing")
}

// TestRAIDPVersionsKept: in a versioned bucket an overwrite keeps the old
// version, so its bytes are not freed; deleting that version through the
// store and telling the client (FreeRAIDP, as S3 DeleteVersion and the
// lifecycle expiry do) queues them.
func TestRAIDPVersionsKept(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	meta, nodes, _ := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{})
	if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "versioned", Policy: cairn.RAIDPPolicy, Versioning: cairn.VersioningEnabled}); err != nil {
		t.Fatal(err)
	}
	v1 := randomBytes(40_000, 1)
	m1, err := c.Put(ctx, "versioned", "k", bytes.NewReader(v1), client.PutOptions{Size: int64(len(v1))})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := c.Put(ctx, "versioned", "k", bytes.NewReader(randomBytes(30_000, 2)), client.PutOptions{Size: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	if q := deadQueue(t, c); len(q) != 0 {
		t.Fatalf("an overwrite in a versioned bucket queued the noncurrent version's ranges: %+v", q)
	}
	// Delete removes the current version (meta.Store.DeleteManifest; S3
	// makes delete markers itself): its bytes are freed, v1's are not.
	if err := c.Delete(ctx, "versioned", "k"); err != nil {
		t.Fatal(err)
	}
	if q := deadQueue(t, c); len(q) != 1 || q[0].Offset != m2.RAIDP.Spans[0].Offset || q[0].Superchunk != m2.RAIDP.Spans[0].Superchunk {
		t.Fatalf("queue after deleting the current version: %+v, want only %+v", q, m2.RAIDP.Spans[0])
	}
	if got := replicaBytes(t, nodes, m1.RAIDP.Spans[0]); !bytes.Equal(got[0], v1) || !bytes.Equal(got[1], v1) {
		t.Fatal("a noncurrent version's bytes changed")
	}
	v, err := meta.DeleteVersion(ctx, "versioned", "k", m1.Version)
	if err != nil || v.Manifest == nil {
		t.Fatalf("delete version: %+v, %v", v, err)
	}
	c.FreeRAIDP(ctx, v.Manifest)
	if q := deadQueue(t, c); len(q) != 2 || q[1].Superchunk != m1.RAIDP.Spans[0].Superchunk || q[1].Offset != m1.RAIDP.Spans[0].Offset || q[1].Length != int64(len(v1)) {
		t.Fatalf("queue after deleting the version: %+v", q)
	}
}
