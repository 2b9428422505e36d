package grid

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/codec/all"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The Monte-Carlo against hand computations on three nodes, each down
// with probability p: a 2-of-3 code on PGs of distinct nodes is readable
// with (1−p)³ + 3(1−p)²p; rep-2 on PGs {0,1} and {1,2} with 1 − p²; and a
// 2-of-3 code whose PG puts two shards on node 0 only when node 0 is up
// (1 − p) — less than the binomial says, which is why the Monte-Carlo
// runs on the real placement.
func TestReadableHandComputed(t *testing.T) {
	rs21, err := all.New("rs-2-1")
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := all.New("rep-2")
	if err != nil {
		t.Fatal(err)
	}
	const trials = 200_000
	for _, tc := range []struct {
		name     string
		st       Stripes
		can      func([]bool) bool
		p, want  float64
		k, n     int
		binomial float64
	}{
		{"rs-2-1 distinct", Stripes{{0, 1, 2}, {2, 0, 1}}, rs21.CanReconstruct, 0.2, 0.512 + 3*0.64*0.2, 2, 3, 0.896},
		{"rs-2-1 distinct p=0.5", Stripes{{0, 1, 2}}, rs21.CanReconstruct, 0.5, 0.5, 2, 3, 0.5},
		{"rep-2", Stripes{{0, 1}, {1, 2}}, rep2.CanReconstruct, 0.3, 1 - 0.09, 1, 2, 0.91},
		{"rs-2-1 two shards on node 0", Stripes{{0, 0, 1}}, rs21.CanReconstruct, 0.2, 0.8, 2, 3, 0.896},
	} {
		got := Readable(tc.st, 3, tc.can, tc.p, trials, rand.New(rand.NewPCG(1, 2)))
		if !near(got, tc.want, 0.005) {
			t.Errorf("%s: Monte-Carlo %.4f, hand %.4f", tc.name, got, tc.want)
		}
		if ex := ReadableExact(tc.k, tc.n, tc.p); !near(ex, tc.binomial, 1e-12) {
			t.Errorf("%s: binomial %.6f, want %.6f", tc.name, ex, tc.binomial)
		}
		if again := Readable(tc.st, 3, tc.can, tc.p, trials, rand.New(rand.NewPCG(1, 2))); again != got {
			t.Errorf("%s: not deterministic for a seed: %v then %v", tc.name, got, again)
		}
	}
	if got := Readable(nil, 3, rs21.CanReconstruct, 0.1, 10, rand.New(rand.NewPCG(1, 2))); got != 0 {
		t.Errorf("no PGs: %v", got)
	}
}

func TestStripesOf(t *testing.T) {
	disks := []cairn.Disk{{ID: "a/d1", Node: "a"}, {ID: "a/d2", Node: "a"}, {ID: "b/d1", Node: "b"}}
	st, nodes, err := StripesOf(cairn.PGTable{Width: 2, PGs: []cairn.PG{{ID: 0, Disks: []cairn.DiskID{"a/d1", "b/d1"}}, {ID: 1, Disks: []cairn.DiskID{"b/d1", "a/d2"}}}}, disks)
	if err != nil || len(nodes) != 2 || !equal(st, Stripes{{0, 1}, {1, 0}}) {
		t.Fatalf("got %v %v %v", st, nodes, err)
	}
	if _, _, err := StripesOf(cairn.PGTable{PGs: []cairn.PG{{Disks: []cairn.DiskID{"c/d1"}}}}, disks); err == nil {
		t.Fatal("an unknown disk was accepted")
	}
}

func equal(a, b Stripes) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// The paper's data moved: (n/k)·size for striping, (n−k+1)·size for
// replication at the same availability.
func TestMovedRatio(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   float64
	}{{"rs-5-3", 8.0 / 5}, {"rs-5-4", 9.0 / 5}, {"rep-5", 5}} {
		c, err := all.New(tc.policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := MovedRatio(c.Params()); !near(got, tc.want, 1e-12) {
			t.Errorf("%s: %v, want %v", tc.policy, got, tc.want)
		}
	}
}

func TestTransferModels(t *testing.T) {
	links := []Link{{Rate: 1e6, RTT: 10 * time.Millisecond}, {Rate: 2e6}, {Rate: 4e6, RTT: 1500 * time.Millisecond}, {Rate: 1e5}}
	// 8 MB in k=4 shards of 2 MB: 2.01 s, 1 s, 2 s, 20 s.
	if got := UploadModel(8e6, 4, links); got != 20*time.Second {
		t.Errorf("upload %v, want the slowest link's 20s", got)
	}
	// k=2 shards of 4 MB, the first 3 asked: 4.01, 2, 2.5 s → the 2nd is 2.5 s.
	if got := DownloadModel(8e6, 2, 3, links); got != 2500*time.Millisecond {
		t.Errorf("download %v, want 2.5s", got)
	}
	if got := DownloadModel(8e6, 4, 3, links); got != 0 {
		t.Errorf("k > asked: %v", got)
	}
}

// A shaped connection: the answer's first byte waits one RTT after the
// request, every byte waits for the link's rate, and the bytes are
// counted. Virtual time.
func TestLinksShapeAndCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		links := NewLinks(nil)
		links.Set("peer:1", Link{Site: "far", Rate: 1 << 20, RTT: 100 * time.Millisecond})
		a, b := net.Pipe()
		c := links.Conn(a, "peer:1")
		defer c.Close()
		const answer = 2 << 20
		go func() {
			defer b.Close()
			req := make([]byte, 7)
			if _, err := io.ReadFull(b, req); err != nil {
				return
			}
			b.Write(bytes.Repeat([]byte{'x'}, answer))
		}()
		start := time.Now()
		if _, err := c.Write([]byte("request")); err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, c)
		if err != nil || n != answer {
			t.Fatalf("read %d, %v", n, err)
		}
		// RTT, then 2 MiB at 1 MiB/s less the 64 KiB burst.
		want := 100*time.Millisecond + time.Duration(float64(answer-64<<10)/(1<<20)*float64(time.Second))
		if got := time.Since(start); got < want-time.Millisecond || got > want+5*time.Millisecond {
			t.Errorf("took %v, want %v", got, want)
		}
		if s, r := links.Bytes(); s != 7 || r != answer {
			t.Errorf("counted %d sent, %d received", s, r)
		}
		if l := links.Get("peer:1"); l.Site != "far" || links.Get("other:1") != (Link{}) {
			t.Errorf("Get: %+v", l)
		}
	})
}

func TestNames(t *testing.T) {
	for bs, want := range map[int]string{0: "default", 10000: "10kB", 50000: "50kB", 1 << 20: "1MiB", 16 << 10: "16KiB"} {
		if got := packetName(bs); got != want {
			t.Errorf("packetName(%d) = %q, want %q", bs, got, want)
		}
	}
	var b strings.Builder
	if err := Table(&b, []Row{
		{Part: PartTransfer, Case: Global, Policy: Striped, Size: 8 << 20, Op: "upload", Seconds: 2, Coding: 0.5, Share: 0.25, Moved: 1.6, Model: 1.5},
		{Part: PartCodec, Policy: Striped, Size: 8e6, BlockSize: 20000, Op: "encode", Seconds: 0.01},
		{Part: PartAvailability, Policy: Replicated, DownPct: 10, Readable: 0.99999, Exact: 0.99999},
	}); err != nil {
		t.Fatal(err)
	}
	want := "transfer     global rs-5-3     8MiB packet default  upload               2.00 s = coding  0.500 s (25.0%) + transfer    1.50 s; moved 1.60× size; model   1.50 s\n" +
		"codec        rs-5-3 packet 20kB     encode          800.0 MB/s\n" +
		"availability rep-5   10% down: readable 1.0000 (binomial 1.0000)\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
