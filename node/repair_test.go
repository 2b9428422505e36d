package node

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cairn"
	"cairn/internal/linkshape"
	"cairn/internal/vfs/errorfs"
	"cairn/node/volume"
	"cairn/node/wire"
	"cairn/repair/plan"
)

func TestRepair(t *testing.T) {
	c := newRepairCluster(t, "rs-6-3", testLayout)
	type tc struct {
		name   string
		scheme plan.Scheme
		lost   []int
		unit   int64
		// repl: Replacements (-Rep) or Survivors (-Sur), by node index.
		nodes []int
		// remote, if >= 0: send the last target to this node's spare instead.
		remote int
		// want: properties of the spec checked before running it.
		sameNodeHops bool // two consecutive hops on one node
		localTarget  bool // a target on the last hop's node (push) or the puller (pull)
		remoteTarget bool // a target elsewhere
	}
	cases := []tc{
		{name: "push-rep/f1/remote-target", scheme: plan.PushRep, lost: []int{8}, unit: 256 << 10, nodes: []int{6}, remote: -1,
			sameNodeHops: true, remoteTarget: true},
		{name: "push-sur/f1/target-on-last-hop", scheme: plan.PushSur, lost: []int{3}, unit: 256 << 10, nodes: []int{0}, remote: -1,
			sameNodeHops: true, localTarget: true},
		{name: "push-sur/f2/local-and-remote", scheme: plan.PushSur, lost: []int{2, 6}, unit: 100_000, nodes: []int{3}, remote: 5,
			sameNodeHops: true, localTarget: true, remoteTarget: true},
		{name: "push-rep/f2/unit64k", scheme: plan.PushRep, lost: []int{0, 8}, unit: 64 << 10, nodes: []int{6, 2}, remote: -1,
			remoteTarget: true},
		{name: "push-rep/f1/one-slice", scheme: plan.PushRep, lost: []int{5}, unit: 4 << 20, nodes: []int{4}, remote: -1,
			sameNodeHops: true, remoteTarget: true},
		{name: "pull-rep/f1", scheme: plan.PullRep, lost: []int{5}, unit: 256 << 10, nodes: []int{4}, remote: -1,
			sameNodeHops: true, localTarget: true},
		{name: "pull-sur/f2/local-helper", scheme: plan.PullSur, lost: []int{1, 7}, unit: 1 << 20, nodes: []int{0}, remote: -1,
			localTarget: true},
		{name: "pull-rep/f1/remote-target", scheme: plan.PullRep, lost: []int{4}, unit: 300_000, nodes: []int{3}, remote: 5,
			sameNodeHops: true, remoteTarget: true},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			version := fmt.Sprintf("%032x", 0xabc000+ci)
			shards := c.stripe(t, version, testShardSize, uint64(ci))
			in := plan.Input{Code: c.code, Lost: tc.lost, Nodes: c.nodesOf(tc.lost), ShardSize: testShardSize, Unit: tc.unit}
			var names []string
			for _, x := range tc.nodes {
				names = append(names, c.nodes[x].name)
			}
			if tc.scheme.Rep() {
				in.Replacements = names
			} else {
				in.Survivors = names
			}
			p, err := plan.Build(tc.scheme, in)
			if err != nil {
				t.Fatal(err)
			}
			spec, puller := c.spec(t, version, p)
			if tc.remote >= 0 {
				n := c.nodes[tc.remote]
				spec.Store[len(spec.Store)-1].Addr, spec.Store[len(spec.Store)-1].Disk = n.addr(), n.spare()
			}
			// The spec has the shape the case is about.
			computer := puller
			if tc.scheme.Push() {
				computer = spec.Hops[len(spec.Hops)-1].Addr
			}
			same, local, remote := false, false, false
			for i := 1; i < len(spec.Hops); i++ {
				same = same || spec.Hops[i].Addr == spec.Hops[i-1].Addr
			}
			for _, tg := range spec.Store {
				local = local || tg.Addr == computer
				remote = remote || tg.Addr != computer
			}
			if same != tc.sameNodeHops || local != tc.localTarget || remote != tc.remoteTarget {
				t.Fatalf("spec shape: same-node hops %v, local target %v, remote target %v; want %v %v %v\n%+v",
					same, local, remote, tc.sameNodeHops, tc.localTarget, tc.remoteTarget, spec)
			}
			c.resetCounters()
			var infos []wire.ShardInfo
			if tc.scheme.Push() {
				infos, err = c.client.Push(context.Background(), spec)
			} else {
				infos, err = c.client.Pull(context.Background(), puller, spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			c.checkStored(t, spec, tc.lost, shards, infos)
			// The PUSH property, from bytes on the wire: no node receives more
			// than f partials per slice position (each hop's node once).
			f := int64(len(tc.lost))
			for _, n := range c.nodes {
				got := n.pushBytes.Load()
				if tc.scheme.Push() && got > f*testShardSize || !tc.scheme.Push() && got != 0 {
					t.Errorf("%s received %d partial bytes, f×Size = %d", n.name, got, f*testShardSize)
				}
				var targets int64
				for _, tg := range spec.Store {
					if tg.Addr == n.addr() && tg.Addr != computer {
						targets++
					}
				}
				if got := n.putBytes.Load(); got != targets*testShardSize {
					t.Errorf("%s received %d PUT bytes, want %d", n.name, got, targets*testShardSize)
				}
			}
			if tc.scheme.Push() {
				// Each run of consecutive hops on one node is one request, and
				// every node of the chain but the first received exactly f×Size.
				runs := map[*repairNode]int64{}
				for i, h := range spec.Hops {
					n := c.disks[h.Disk]
					if i == 0 || spec.Hops[i-1].Addr != h.Addr {
						runs[n]++
					}
					if i > 0 && spec.Hops[i-1].Addr != h.Addr && n.pushBytes.Load() != f*testShardSize {
						t.Errorf("hop %d (%s) received %d partial bytes, want %d", i, n.name, n.pushBytes.Load(), f*testShardSize)
					}
				}
				for _, n := range c.nodes {
					if got := n.pushReqs.Load(); got != runs[n] {
						t.Errorf("%s received %d push requests, want %d", n.name, got, runs[n])
					}
				}
			}
		})
	}
}

// corrupt flips a byte in block b of a shard file on a mem FS.
func corrupt(t *testing.T, d *disk, name string, b int) {
	t.Helper()
	p := path.Join(d.dir, volume.ShardsDir, name[:2], name)
	f, err := d.fs.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	raw := make([]byte, fi.Size())
	if _, err := f.ReadAt(raw, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	f.Close()
	raw[b*(volume.BlockSize+4)+9] ^= 0x80
	w, err := d.fs.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(raw)
	w.Close()
}

// TestRepairBadHelper: a helper shard that is corrupt (mid-shard) or
// missing, anywhere in the chain, fails the repair with an error naming
// that helper's disk and shard, and nothing is stored.
func TestRepairBadHelper(t *testing.T) {
	c := newRepairCluster(t, "rs-6-3", testLayout)
	lost := []int{7, 8}
	for ci, tc := range []struct {
		scheme plan.Scheme
		hop    int // which helper (chain position) goes bad
		how    string
	}{
		{plan.PushRep, 3, "corrupt"},
		{plan.PushRep, 5, "corrupt"}, // the last hop
		{plan.PushRep, 0, "corrupt"},
		{plan.PushRep, 4, "missing"},
		{plan.PullRep, 2, "corrupt"},
		{plan.PullRep, 1, "missing"},
	} {
		t.Run(fmt.Sprintf("%s/hop%d/%s", tc.scheme, tc.hop, tc.how), func(t *testing.T) {
			version := fmt.Sprintf("%032x", 0xbad000+ci)
			c.stripe(t, version, testShardSize, uint64(ci))
			p, err := plan.Build(tc.scheme, plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost),
				Replacements: []string{"node6"}, ShardSize: testShardSize, Unit: 128 << 10})
			if err != nil {
				t.Fatal(err)
			}
			spec, puller := c.spec(t, version, p)
			bad := spec.Hops[tc.hop]
			d := c.disk(bad.Disk)
			if tc.how == "corrupt" {
				corrupt(t, d, bad.Shard, 9) // well into the shard: earlier slices have gone down the chain
			} else if err := d.v.Delete(context.Background(), bad.Shard); err != nil {
				t.Fatal(err)
			}
			if tc.how == "corrupt" {
				defer d.v.Delete(context.Background(), bad.Shard) // the cleanup's fsck would object
			}
			if tc.scheme.Push() {
				_, err = c.client.Push(context.Background(), spec)
			} else {
				_, err = c.client.Pull(context.Background(), puller, spec)
			}
			want := cairn.ErrCorrupt
			if tc.how == "missing" {
				want = cairn.ErrNotFound
			}
			var ne *wire.Error
			if !errors.Is(err, want) || !errors.As(err, &ne) || ne.Disk != bad.Disk || ne.Shard != bad.Shard {
				t.Fatalf("got %v (%#v), want %v naming %s %s", err, ne, want, bad.Disk, bad.Shard)
			}
			t.Logf("error: %v", err)
			c.checkNothingStored(t, spec)
		})
	}
}

// TestRepairBadTarget: a full or unreachable target fails the repair with
// an error naming it; the other target's shard does not stay.
func TestRepairBadTarget(t *testing.T) {
	c := newRepairCluster(t, "rs-6-3", testLayout)
	lost := []int{7, 8}
	gone := httptest.NewServer(http.NotFoundHandler())
	goneAddr := gone.Listener.Addr().String()
	gone.Close()
	for ci, how := range []string{"full-local", "full-remote", "unreachable", "remote-fails-last", "local-fails-last"} {
		t.Run(how, func(t *testing.T) {
			version := fmt.Sprintf("%032x", 0xf011000+ci)
			c.stripe(t, version, testShardSize, uint64(ci))
			// PUSH-Sur onto node3: target 0 local to the last hop, target 1 on node6.
			p, err := plan.Build(plan.PushSur, plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost),
				Survivors: []string{"node3"}, ShardSize: testShardSize, Unit: 128 << 10})
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := c.spec(t, version, p)
			spec.Store[1].Addr, spec.Store[1].Disk = c.nodes[6].addr(), c.nodes[6].spare()
			badTarget := spec.Store[1]
			want := cairn.ErrNoSpace
			switch how {
			case "full-local":
				badTarget = spec.Store[0]
				fallthrough
			case "full-remote":
				efs := c.disks[badTarget.Disk].efs[badTarget.Disk]
				efs.SetInjector(errorfs.NewFailNth(errorfs.OnKinds(errorfs.OpFileWrite), 0, syscall.ENOSPC))
				defer efs.SetInjector(nil)
			case "unreachable":
				spec.Store[1].Addr = goneAddr
				badTarget = spec.Store[1]
				want = cairn.ErrUnavailable
			case "remote-fails-last", "local-fails-last":
				// The bad target fails its rename only once the other one is
				// stored: the repair fails and must delete the other again.
				good := spec.Store[0]
				if how == "local-fails-last" {
					badTarget, good = spec.Store[0], spec.Store[1]
				}
				efs := c.disks[badTarget.Disk].efs[badTarget.Disk]
				otherFS := c.disks[good.Disk].efs[good.Disk]
				stored := errorfs.NewSignal(errorfs.OnKinds(errorfs.OpRename), nil) // the good target's only rename: its shard
				otherFS.SetInjector(stored)
				defer otherFS.SetInjector(nil)
				efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
					if op.Kind != errorfs.OpRename {
						return nil
					}
					select {
					case <-stored.C():
					case <-time.After(10 * time.Second):
					}
					return syscall.ENOSPC
				}))
				defer efs.SetInjector(nil)
			}
			_, err = c.client.Push(context.Background(), spec)
			var ne *wire.Error
			if !errors.Is(err, want) || !errors.As(err, &ne) || ne.Disk != badTarget.Disk || ne.Shard != badTarget.Shard {
				t.Fatalf("got %v, want %v naming %s %s", err, want, badTarget.Disk, badTarget.Shard)
			}
			t.Logf("error: %v", err)
			c.checkNothingStored(t, spec)
		})
	}
}

// TestRepairCancel: the coordinator cancels a push mid-stream; every
// handler returns, and the target has neither the shard nor a temporary
// file.
func TestRepairCancel(t *testing.T) {
	for _, scheme := range []plan.Scheme{plan.PushRep, plan.PullRep} {
		for _, remote := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/remote-target=%v", scheme, remote), func(t *testing.T) {
				testRepairCancel(t, scheme, remote)
			})
		}
	}
}

func testRepairCancel(t *testing.T, scheme plan.Scheme, remote bool) {
	c := newRepairCluster(t, "rs-6-3", testLayout)
	const size = 2*RepairReadRun + volume.BlockSize
	version := fmt.Sprintf("%032x", 0xcafe)
	c.stripe(t, version, size, 1)
	lost := []int{8}
	in := plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost), ShardSize: size, Unit: 256 << 10}
	if scheme == plan.PushRep {
		in.Replacements = []string{"node6"} // not in the chain: a remote target
	} else {
		in.Replacements = []string{"node4"}
	}
	p, err := plan.Build(scheme, in)
	if err != nil {
		t.Fatal(err)
	}
	spec, puller := c.spec(t, version, p)
	if scheme == plan.PushRep && !remote {
		last := c.disks[spec.Hops[len(spec.Hops)-1].Disk]
		spec.Store[0].Addr, spec.Store[0].Disk = last.addr(), last.spare()
	}
	if scheme == plan.PullRep && remote {
		spec.Store[0].Addr, spec.Store[0].Disk = c.nodes[6].addr(), c.nodes[6].spare()
	}
	// The first helper's disk stalls after half the shard: a push hop
	// reads its footer, then the shard in runs of up to RepairReadRun; a
	// pull fetches it one unit per GET, each reading the footer and the
	// unit.
	// Push: the footer and the first run, which is more than a target's
	// first write run.
	half := int64(2)
	if !scheme.Push() {
		half = 2 * size / in.Unit / 2
	}
	first := c.disks[spec.Hops[0].Disk].efs[spec.Hops[0].Disk]
	release := make(chan struct{})
	var reads atomic.Int64
	first.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, spec.Hops[0].Shard) && reads.Add(1) > half {
			<-release
		}
		return nil
	}))
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()

	targetFS := c.disks[spec.Store[0].Disk].efs[spec.Store[0].Disk]
	wrote := errorfs.NewSignal(func(op errorfs.Op) bool {
		return op.Kind == errorfs.OpFileWrite && path.Base(path.Dir(op.Path)) == volume.TmpDir
	}, nil)
	targetFS.SetInjector(wrote)
	defer targetFS.SetInjector(nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		var err error
		if scheme.Push() {
			_, err = c.client.Push(ctx, spec)
		} else {
			_, err = c.client.Pull(ctx, puller, spec)
		}
		errc <- err
	}()
	// Wait until the target has written rebuilt data to its temporary file.
	target := c.disk(spec.Store[0].Disk)
	tmpDir := path.Join(target.dir, volume.TmpDir)
	select {
	case <-wrote.C():
	case err := <-errc:
		t.Fatalf("repair ended before the cancel: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the target never wrote")
	}
	names, _ := target.fs.List(tmpDir)
	written := int64(0)
	for _, nm := range names {
		if fi, err := target.fs.Stat(path.Join(tmpDir, nm)); err == nil {
			written += fi.Size()
		}
	}
	if written == 0 {
		t.Fatal("the target's write left no data in its temporary file")
	}
	t.Logf("cancel after %d reads of the first helper", reads.Load())
	cancel()
	// Let the first helper's disk go on once its node saw the cancellation
	// (push: hop 0's request; pull: the puller's fetch).
	firstNode := c.disks[spec.Hops[0].Disk]
	isFirst := func(req string) bool { return req == "POST "+wire.PushPath }
	if !scheme.Push() {
		isFirst = func(req string) bool {
			return strings.HasPrefix(req, "GET ") && strings.HasSuffix(req, spec.Hops[0].Shard)
		}
	}
	for seen := false; !seen; {
		select {
		case got := <-firstNode.ctxDone:
			seen = isFirst(got)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s never saw the cancellation", firstNode.name)
		}
	}
	unblock()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled repair: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled repair did not return")
	}
	c.checkNothingStored(t, spec) // waits for every handler to return
	// The reads up to the stall, and the one that was blocked.
	if n := reads.Load(); n > half+1 {
		t.Errorf("the first helper's disk had %d reads after the cancel; %d were done before", n, half)
	}
}

// TestRepairInvalid: bad specs are refused by the client before sending
// and by the node (400 invalid); a hop on a node that does not serve its
// disk is 404 no_disk naming that hop.
func TestRepairInvalid(t *testing.T) {
	c := newRepairCluster(t, "rs-6-3", testLayout)
	version := fmt.Sprintf("%032x", 0x1171)
	c.stripe(t, version, testShardSize, 7)
	lost := []int{8}
	p, err := plan.Build(plan.PushRep, plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost),
		Replacements: []string{"node6"}, ShardSize: testShardSize, Unit: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := c.spec(t, version, p)
	clone := func() wire.RepairSpec {
		s := good
		s.Hops = append([]wire.Hop(nil), good.Hops...)
		s.Store = append([]wire.Target(nil), good.Store...)
		return s
	}
	bad := map[string]func(*wire.RepairSpec){
		"zero size":        func(s *wire.RepairSpec) { s.Size = 0 },
		"negative size":    func(s *wire.RepairSpec) { s.Size = -5 },
		"zero unit":        func(s *wire.RepairSpec) { s.Unit = 0 },
		"huge unit":        func(s *wire.RepairSpec) { s.Unit = wire.MaxRepairUnit + 1 },
		"no hops":          func(s *wire.RepairSpec) { s.Hops = nil },
		"no targets":       func(s *wire.RepairSpec) { s.Store = nil },
		"too many targets": func(s *wire.RepairSpec) { s.Store = make([]wire.Target, wire.MaxRepairTargets+1) },
		"short coeffs":     func(s *wire.RepairSpec) { s.Hops[2].Coeffs = nil },
		"long coeffs":      func(s *wire.RepairSpec) { s.Hops[2].Coeffs = []byte{1, 2} },
		"bad shard name":   func(s *wire.RepairSpec) { s.Hops[1].Shard = "../x" },
		"bad target name":  func(s *wire.RepairSpec) { s.Store[0].Shard = "x" },
		"no addr":          func(s *wire.RepairSpec) { s.Hops[0].Addr = "" },
		"no target disk":   func(s *wire.RepairSpec) { s.Store[0].Disk = "" },
		"helper twice":     func(s *wire.RepairSpec) { s.Hops[3] = s.Hops[1] },
		"target is helper": func(s *wire.RepairSpec) { s.Store[0].Disk, s.Store[0].Shard = s.Hops[2].Disk, s.Hops[2].Shard },
		"identity of another shard": func(s *wire.RepairSpec) {
			s.Store[0].Identity = identOf(t, cairn.ShardName(version, 1))
		},
		"damaged identity": func(s *wire.RepairSpec) {
			s.Store[0].Identity = append([]byte(nil), s.Store[0].Identity...)
			s.Store[0].Identity[2] ^= 1
		},
	}
	for name, mutate := range bad {
		s := clone()
		mutate(&s)
		if _, err := c.client.Push(context.Background(), s); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("push %s: %v", name, err)
		}
		if _, err := c.client.Pull(context.Background(), c.nodes[6].addr(), s); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("pull %s: %v", name, err)
		}
		if s.Validate() == nil {
			t.Errorf("%s: Validate passed", name)
		}
		// The node refuses it too.
		for _, ep := range []string{wire.PushPath, wire.PullPath} {
			b, _ := json.Marshal(wire.RepairRequest{Spec: s})
			resp, body := rawRepair(t, c.nodes[0], ep, base64.RawURLEncoding.EncodeToString(b), nil)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid"`) {
				t.Errorf("%s %s: %d %s", ep, name, resp.StatusCode, body)
			}
		}
	}
	// Malformed requests.
	for name, hv := range map[string]string{
		"no header":  "",
		"not base64": "!!!",
		"not json":   base64.RawURLEncoding.EncodeToString([]byte("{")),
		"bad hop":    mustEncode(t, wire.RepairRequest{Spec: good, Hop: len(good.Hops)}),
		"neg hop":    mustEncode(t, wire.RepairRequest{Spec: good, Hop: -1}),
	} {
		resp, body := rawRepair(t, c.nodes[0], wire.PushPath, hv, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":"invalid"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	// Hop 0 with a body, a later hop with a body of the wrong length, a pull with a body.
	if resp, body := rawRepair(t, c.disks[good.Hops[0].Disk], wire.PushPath, mustEncode(t, wire.RepairRequest{Spec: good}), strings.NewReader("x")); resp.StatusCode != 400 {
		t.Errorf("hop 0 with a body: %d %s", resp.StatusCode, body)
	}
	if resp, body := rawRepair(t, c.disks[good.Hops[3].Disk], wire.PushPath, mustEncode(t, wire.RepairRequest{Spec: good, Hop: 3}), strings.NewReader("x")); resp.StatusCode != 400 {
		t.Errorf("hop 3 with a short body: %d %s", resp.StatusCode, body)
	}
	if resp, body := rawRepair(t, c.nodes[6], wire.PullPath, mustEncode(t, wire.RepairRequest{Spec: good}), strings.NewReader("x")); resp.StatusCode != 400 {
		t.Errorf("pull with a body: %d %s", resp.StatusCode, body)
	}
	// A wrong secret.
	other := NewClient("wrong", c.client.resolve, nil)
	if _, err := other.Push(context.Background(), good); !errors.Is(err, cairn.ErrAuth) {
		t.Errorf("push with a wrong secret: %v", err)
	}
	// Hop 3's address is a node that does not serve its disk.
	s := clone()
	var wrong *repairNode
	for _, n := range c.nodes {
		if c.disks[s.Hops[3].Disk] != n && s.Hops[2].Addr != n.addr() && s.Hops[4].Addr != n.addr() {
			wrong = n
		}
	}
	s.Hops[3].Addr = wrong.addr()
	_, err = c.client.Push(context.Background(), s)
	var ne *wire.Error
	if !errors.Is(err, cairn.ErrNotFound) || !errors.As(err, &ne) || ne.Code != "no_disk" || ne.Disk != s.Hops[3].Disk || ne.Shard != s.Hops[3].Shard {
		t.Fatalf("hop on the wrong node: %v", err)
	}
	c.checkNothingStored(t, s)
	// A puller that cannot be reached.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	if _, err := c.client.Pull(context.Background(), gone.URL, good); !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("unreachable puller: %v", err)
	}
}

func rawRepair(t *testing.T, n *repairNode, ep, header string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.srv.URL+ep, body)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set(wire.HeaderRepair, header)
	}
	signTest(t, req, testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func mustEncode(t *testing.T, req wire.RepairRequest) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// The disk requests a helper's shard costs: a push hop reads it in runs of
// RepairReadRun (its read region), a pull fetches it one request unit per
// GET. On a spinning disk shared by several repairs this is the whole
// difference between the two (the paper's PULL-Sur suffers seeks).
func TestRepairHelperDiskRequests(t *testing.T) {
	const size = 2*RepairReadRun + 100<<10
	const unit = 128 << 10
	for _, scheme := range []plan.Scheme{plan.PushRep, plan.PullRep} {
		t.Run(scheme.String(), func(t *testing.T) {
			c := newRepairCluster(t, "rs-6-3", testLayout)
			version := fmt.Sprintf("%032x", 0xd15c)
			shards := c.stripe(t, version, size, 7)
			lost := []int{8}
			in := plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost), ShardSize: size, Unit: unit, Replacements: []string{"node6"}}
			p, err := plan.Build(scheme, in)
			if err != nil {
				t.Fatal(err)
			}
			spec, puller := c.spec(t, version, p)
			logs := map[cairn.DiskID]*errorfs.Log{}
			for _, h := range spec.Hops {
				logs[h.Disk] = &errorfs.Log{}
				c.disks[h.Disk].efs[h.Disk].SetInjector(logs[h.Disk])
			}
			var infos []wire.ShardInfo
			if scheme.Push() {
				infos, err = c.client.Push(context.Background(), spec)
			} else {
				infos, err = c.client.Pull(context.Background(), puller, spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			c.checkStored(t, spec, lost, shards, infos)
			units := (size + unit - 1) / unit
			want := 1 + (size+RepairReadRun-1)/RepairReadRun // footer + runs
			if !scheme.Push() {
				want = 2 * units // footer + one unit, per GET
			}
			for _, h := range spec.Hops {
				c.disks[h.Disk].efs[h.Disk].SetInjector(nil)
				reads := logs[h.Disk].Count(func(op errorfs.Op) bool {
					return op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, h.Shard)
				})
				if reads != want {
					t.Errorf("%s: %d disk reads of helper %s, want %d", scheme, reads, h.Shard, want)
				}
			}
		})
	}
}

// fakeClock advances only when someone sleeps (one sleeper at a time).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration, _ <-chan struct{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return nil
}

// TestRepairRate: a node with a RepairRate paces the repair data it
// computes; the others are not slowed. Measured on a fake clock: the
// limited node waits for about (its output − the burst) / rate.
func TestRepairRate(t *testing.T) {
	const size, rate = 1 << 20, 256 << 10
	clock := &fakeClock{now: time.Unix(0, 0)}
	var limited string
	c := newRepairCluster(t, "rs-6-3", testLayout, func(name string, cfg *HandlerConfig) {
		if name == "node2" {
			cfg.RepairRate, cfg.repairClock = rate, clock
		}
	})
	version := fmt.Sprintf("%032x", 0xbead)
	shards := c.stripe(t, version, size, 11)
	lost := []int{8}
	p, err := plan.Build(plan.PushRep, plan.Input{Code: c.code, Lost: lost, Nodes: c.nodesOf(lost), ShardSize: size, Unit: 64 << 10, Replacements: []string{"node6"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := c.spec(t, version, p)
	for _, h := range spec.Hops {
		if c.disks[h.Disk].name == "node2" {
			limited = h.Shard
		}
	}
	if limited == "" {
		t.Fatal("node2 is not in the chain")
	}
	infos, err := c.client.Push(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	c.checkStored(t, spec, lost, shards, infos)
	waited := clock.Now().Sub(time.Unix(0, 0))
	want := time.Duration(float64(size-linkshape.Burst) / rate * float64(time.Second))
	if waited < want*9/10 || waited > want*11/10 {
		t.Fatalf("node2 waited %v for its 1 MiB of partials at 256 KiB/s, want about %v", waited, want)
	}
	if _, err := NewHandler(HandlerConfig{Secret: "s", RepairRate: -1}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("negative repair rate: %v", err)
	}
}
