package benchcli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/testcluster"
)

// TestClusterRestart: restart replaces every node process (here onto
// throttled disks, as the gp bench does between its setup and its
// measurement), the disks keep their data, and the cluster's client
// reaches them through the new processes, the old ones being gone.
func TestClusterRestart(t *testing.T) {
	bin := testcluster.Binary(t)
	prev := nodeProgram
	nodeProgram = func() (string, error) { return bin, nil }
	t.Cleanup(func() { nodeProgram = prev })
	ctx := context.Background()
	dir := t.TempDir()
	var fast, slow []nodeSpec
	for _, id := range []string{"n1", "n2"} {
		fast = append(fast, nodeSpec{ID: id, Disks: []string{filepath.Join(dir, id)}})
		slow = append(slow, nodeSpec{ID: id, Disks: []string{filepath.Join(dir, id) + ",bw=100000000,seek=1ms"}})
	}
	c, err := startCluster(ctx, dir, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	name := strings.Repeat("ab", 16) + ".0"
	data := bytes.Repeat([]byte("cairn"), 1000)
	for _, p := range c.procs {
		if _, err := c.client.PutShard(ctx, p.Disks[0], name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	before := append([]nodeProc(nil), c.procs...)
	old := append(c.started[:0:0], c.started...)
	if err := c.restart(ctx, slow[:1]); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("restart with 1 spec for 2 nodes: %v, want ErrInvalid", err)
	}
	if err := c.restart(ctx, slow); err != nil {
		t.Fatal(err)
	}
	for i, p := range c.procs {
		if old[i].Alive() {
			t.Errorf("node %d's old process still runs", i)
		}
		if c.started[i] == old[i] || p.ID != before[i].ID || p.Disks[0] != before[i].Disks[0] {
			t.Errorf("node %d after restart: %+v (process replaced: %v), before %+v", i, p, c.started[i] != old[i], before[i])
		}
		rc, err := c.client.GetShard(ctx, p.Disks[0], name, 0, -1)
		if err != nil {
			t.Fatalf("%s after restart: %v", p.Disks[0], err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after restart: %d bytes, %v", p.Disks[0], len(got), err)
		}
	}
}
