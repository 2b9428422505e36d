package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn/internal/testcluster"
)

type object struct {
	bucket, key, path string
	sum               [32]byte
}

// The spine on real processes: 3 metadata members and 6 nodes; objects of
// every size under three policies; node losses, an etcd leader loss, and a
// flipped byte on disk.
func TestSpineRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 9 processes and moves ~1 GiB")
	}
	c := testcluster.Start(t, testcluster.Config{Metas: 3, Nodes: 6, DisksPerNode: 2})
	policies := map[string]string{"rs-bucket": "rs-4-2", "lrc-bucket": "lrc-6-2-2", "rep-bucket": "rep-3", "lt-bucket": "lt-32-3"}
	for b, p := range policies {
		c.CLI(t, "mb", b, "--policy", p)
	}
	src := t.TempDir()
	sizes := []int64{0, 1, 1<<20 - 1, 5<<20 + 3, 300 << 20}
	var objs []object
	for b := range policies {
		for i, size := range sizes {
			if b == "lt-bucket" && size > 64<<20 {
				size = 40 << 20 // two 32 MiB stripes of 96 coded blocks; spare CI the rest
			}
			name := fmt.Sprintf("%s-%d", b, size)
			path, sum := writeFile(t, src, name, size, uint64(i))
			key := "dir/" + name
			c.CLI(t, "put", path, b+"/"+key)
			objs = append(objs, object{b, key, path, sum})
		}
	}
	readAll := func(t *testing.T, which func(object) bool) {
		t.Helper()
		dst := t.TempDir()
		for i, o := range objs {
			if !which(o) {
				continue
			}
			out := filepath.Join(dst, fmt.Sprint(i))
			c.CLI(t, "get", o.bucket+"/"+o.key, out)
			if fileSum(t, out) != o.sum {
				t.Fatalf("%s/%s read back wrong", o.bucket, o.key)
			}
			os.Remove(out)
		}
	}
	all := func(object) bool { return true }
	readAll(t, all)

	t.Run("FlippedByte", func(t *testing.T) {
		// Flip a byte in the data area of shards 0 and 1 of the 5 MiB rs-4-2
		// object: any 4 of its 6 shards decode it, so with two bad shards
		// the read cannot finish without noticing both.
		m := c.CLI(t, "stat", "rs-bucket/dir/rs-bucket-5242883")
		version := field(m, "version")
		var flipped []string
		filepath.Walk(c.Dir, func(p string, info os.FileInfo, err error) error {
			if b := filepath.Base(p); err == nil && (b == version+".0" || b == version+".1") {
				flipByte(t, p, 1000)
				flipped = append(flipped, p)
			}
			return nil
		})
		// Put the bytes back afterwards, so the node-loss test starts from
		// a healthy cluster whenever the director repairs the damage the
		// read reports (moving each shard to its node's other disk, or
		// rewriting it: still one shard per node).
		defer func() {
			for _, p := range flipped {
				flipByte(t, p, 1000)
			}
		}()
		if len(flipped) != 2 {
			t.Fatalf("found %d of shards 0 and 1 of version %s under %s", len(flipped), version, c.Dir)
		}
		out := filepath.Join(t.TempDir(), "o")
		log, err := c.TryCLI(context.Background(), "get", "rs-bucket/dir/rs-bucket-5242883", out)
		if err != nil {
			t.Fatalf("get with a corrupt shard: %v\n%s", err, log)
		}
		if !sameFile(t, out, filepath.Join(src, "rs-bucket-5242883")) {
			t.Fatal("read with a corrupt shard returned wrong bytes")
		}
		if !strings.Contains(log, "corrupt") {
			t.Fatalf("the corruption was not reported:\n%s", log)
		}
	})

	t.Run("EtcdLeaderLoss", func(t *testing.T) {
		leader := etcdLeader(t, c)
		c.Metas[leader].Kill()
		// Committed objects are all there, and writes resume after the election.
		deadline := time.Now().Add(60 * time.Second)
		path, sum := writeFile(t, src, "after-election", 3<<20, 99)
		for {
			_, err := c.TryCLI(context.Background(), "put", path, "rs-bucket/after-election")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writes did not resume within a minute of killing the etcd leader: %v", err)
			}
			// real time: a retry pause while the real etcd members elect a leader.
			time.Sleep(time.Second)
		}
		objs = append(objs, object{"rs-bucket", "after-election", path, sum})
		readAll(t, all)
	})

	t.Run("NodeLosses", func(t *testing.T) {
		c.Nodes[0].Kill()
		readAll(t, all) // any policy survives one node (≤ 2 shards of lrc-6-2-2 on 6 nodes)
		c.Nodes[1].Kill()
		// Two nodes: rs-4-2 and rep-3 have at most one shard per node;
		// lrc-6-2-2 has 10 shards on 6 nodes, arranged (placement.Arrange)
		// so that any two nodes' shards are a decodable loss; lt-32-3's 96
		// blocks per stripe are spread over the 12 disks by their speed,
		// about 64 of them on the four nodes left, and 32 decode.
		readAll(t, all)
	})
}

func field(stat, name string) string {
	for _, l := range strings.Split(stat, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// etcdLeader returns the index of the metadata member that leads.
func etcdLeader(t *testing.T, c *testcluster.Cluster) int {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.MetaEndpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i, ep := range c.MetaEndpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return i
		}
	}
	t.Fatal("no etcd leader found")
	return -1
}
