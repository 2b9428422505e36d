package volume

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

func TestValidateName(t *testing.T) {
	v := strings.Repeat("0123456789abcdef", 2)
	tests := []struct {
		name string
		ok   bool
	}{
		{v + ".0", true},
		{v + ".5", true},
		{v + ".9999", true},
		{cairn.ShardName(v, 255), true},
		{v + ".10000", false},
		{v + ".01", false},
		{v + ".", false},
		{v + ".-1", false},
		{v + ".1a", false},
		{strings.ToUpper(v) + ".1", false},
		{v[:31] + ".1", false},
		{v + "0.1", false},
		{v + "/1", false},
		{"", false},
		{"/", false},
		{".", false},
		{"..", false},
		{"../../x", false},
		{"../../" + v[6:] + ".1", false},
		{v[:30] + "/.1", false},
		{v + ".1\x00", false},
		{"\x00" + v[1:] + ".1", false},
		{strings.Repeat("a", 5000), false},
		{v + ".1/", false},
		{v + ".1 ", false},
	}
	for _, tc := range tests {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("ValidateName(%q) = %v, not ErrInvalid", tc.name, err)
		}
	}
}

func TestFileSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 4, 5, BlockSize - 1, BlockSize, BlockSize + 1, 3*BlockSize + 17, 1 << 40} {
		got, ok := contentLengthFor(fileSizeFor(n))
		if !ok || got != n {
			t.Errorf("contentLengthFor(fileSizeFor(%d)) = %d, %v", n, got, ok)
		}
	}
	for _, bad := range []int64{0, 31, footerSize + 1, footerSize + 4, footerSize + BlockSize + 4 + 3} {
		if _, ok := contentLengthFor(bad); ok {
			t.Errorf("contentLengthFor(%d) accepted", bad)
		}
	}
}

func TestPutGetRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fsys := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{{"mem", vfs.NewMem(), "/disk1"}, {"os", vfs.Default, path.Join(t.TempDir(), "disk1")}} {
		t.Run(fsys.name, func(t *testing.T) {
			v := openTest(t, fsys.fs, fsys.dir)
			batch := DefaultWriteRun // one write call; and past writebackEvery
			for i, size := range []int{0, 1, BlockSize - 1, BlockSize, BlockSize + 1, 3*BlockSize + 17,
				batch - 1, batch, batch + 1, 2*batch + BlockSize/2, writebackEvery*2 + 3} {
				name := shardName(i, i)
				data := randBytes(rng, size)
				// Odd sizes' files carry an identity (format 2), the
				// others none (format 1, as before identities).
				var put ShardInfo
				if i%2 == 1 {
					put = mustPut(t, v, name, data)
				} else {
					put = mustPutV1(t, v, name, data)
				}
				mustGet(t, v, name, data)
				info, err := v.Stat(context.Background(), name)
				if err != nil || info != put {
					t.Fatalf("stat %+v %v, put returned %+v", info, err, put)
				}
				fi, err := fsys.fs.Stat(v.shardPath(name))
				if err != nil || fi.Size() != fileSizeFor(int64(size))+int64(put.Ident) {
					t.Fatalf("file size %v %v", fi, err)
				}
				n := int64(size)
				for _, r := range [][2]int64{{0, 0}, {0, n}, {n, 0}, {n, -1}, {n / 2, -1}, {1, n - 2}, {BlockSize - 3, 7}, {BlockSize, 1}, {2*BlockSize + 5, BlockSize}} {
					off, ln := r[0], r[1]
					if ln < -1 || off > n || (ln >= 0 && off+ln > n) {
						continue
					}
					got, err := readRange(v, name, off, ln)
					if err != nil {
						t.Fatalf("range %d+%d of %d: %v", off, ln, n, err)
					}
					end := n
					if ln >= 0 {
						end = off + ln
					}
					if !bytes.Equal(got, data[off:end]) {
						t.Fatalf("range %d+%d of %d: wrong bytes", off, ln, n)
					}
				}
				for _, r := range [][2]int64{{-1, 1}, {n + 1, -1}, {0, n + 1}, {n, 1}, {0, -2}} {
					if _, err := readRange(v, name, r[0], r[1]); !errors.Is(err, cairn.ErrInvalid) {
						t.Fatalf("range %v of %d: %v, want ErrInvalid", r, n, err)
					}
				}
			}
			// Replace an existing shard.
			mustPut(t, v, shardName(1, 1), []byte("new content"))
			mustGet(t, v, shardName(1, 1), []byte("new content"))
		})
	}
}

func TestRangeReadTouchesOnlyItsBlocks(t *testing.T) {
	mem := vfs.NewMem()
	log := &errorfs.Log{}
	efs := errorfs.Wrap(mem, nil)
	v := openTest(t, efs, "/d")
	data := randBytes(rand.New(rand.NewPCG(3, 4)), 10*BlockSize)
	name := shardName(1, 0)
	mustPut(t, v, name, data)
	efs.SetInjector(log)
	got, err := readRange(v, name, 4*BlockSize+10, BlockSize) // blocks 4 and 5
	efs.SetInjector(nil)
	if err != nil || !bytes.Equal(got, data[4*BlockSize+10:5*BlockSize+10]) {
		t.Fatalf("range: %v", err)
	}
	if n := log.Count(errorfs.OnKinds(errorfs.OpFileReadAt)); n != 3 { // footer + 2 blocks
		t.Fatalf("%d ReadAt calls, want 3: %v", n, log.Ops())
	}
}

func TestCorruptBlockIsDetected(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	data := randBytes(rand.New(rand.NewPCG(5, 6)), 4*BlockSize)
	name := shardName(2, 3)
	mustPut(t, v, name, data)
	// Flip one bit in block 2.
	rewrite(t, mem, v.shardPath(name), func(b []byte) []byte {
		b[2*(BlockSize+crcSize)+100] ^= 0x10
		return b
	})
	// Blocks before it still read.
	if got, err := readRange(v, name, 0, 2*BlockSize); err != nil || !bytes.Equal(got, data[:2*BlockSize]) {
		t.Fatalf("good blocks: %v", err)
	}
	if n := v.Corruptions(); n != 0 {
		t.Fatalf("%d corruptions counted before reading the bad block", n)
	}
	// A range touching it fails after returning the good bytes.
	r, err := v.NewReader(context.Background(), name, BlockSize, 2*BlockSize)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	var ve *Error
	if !errors.Is(err, cairn.ErrCorrupt) || !errors.As(err, &ve) || ve.Block != 2 || ve.Shard != name {
		t.Fatalf("corrupt read: %v", err)
	}
	if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "block 2") {
		t.Fatalf("error does not name shard and block: %v", err)
	}
	if n := v.Corruptions(); n != 1 {
		t.Fatalf("%d corruptions counted after one bad block, want 1 (metrics' CRC failures)", n)
	}
	if !bytes.Equal(got, data[BlockSize:2*BlockSize]) {
		t.Fatalf("got %d good bytes before the error, want %d", len(got), BlockSize)
	}
	if _, err := v.Verify(context.Background(), name); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("verify: %v", err)
	}
	rep, err := v.Fsck(context.Background(), FsckOptions{})
	if err != nil || len(rep.Corrupt) != 1 || !strings.HasPrefix(rep.Corrupt[0], name) {
		t.Fatalf("fsck: %+v %v", rep, err)
	}
	if err := v.Delete(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptFooterAndTruncation(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	data := randBytes(rand.New(rand.NewPCG(7, 8)), BlockSize+10)
	for i, edit := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)-10] ^= 1; return b },   // footer content
		func(b []byte) []byte { return b[:len(b)-1] },           // truncated
		func(b []byte) []byte { return b[:10] },                 // shorter than a footer
		func(b []byte) []byte { return append(b, 0) },           // grown
		func(b []byte) []byte { b[len(b)-32] = 'X'; return b },  // magic
		func(b []byte) []byte { b[BlockSize+2] ^= 4; return b }, // a block CRC
		func(b []byte) []byte { b[len(b)-33] ^= 1; return b },   // the identity's CRC
		func(b []byte) []byte { b[len(b)-60] ^= 1; return b },   // the identity's JSON
	} {
		name := shardName(10+i, 0)
		mustPut(t, v, name, data)
		rewrite(t, mem, v.shardPath(name), edit)
		if _, err := v.Verify(context.Background(), name); !errors.Is(err, cairn.ErrCorrupt) {
			t.Errorf("edit %d: verify: %v", i, err)
		}
		if err := v.Delete(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeleteAndNotFound(t *testing.T) {
	v := openTest(t, vfs.NewMem(), "/d")
	name := shardName(1, 2)
	ctx := context.Background()
	if _, err := v.NewReader(ctx, name, 0, -1); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if err := v.Delete(ctx, name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	mustPut(t, v, name, []byte("x"))
	if err := v.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Stat(ctx, name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("stat deleted: %v", err)
	}
	for _, bad := range []string{"../../x", "/", "", "..", "a\x00b"} {
		if err := v.Delete(ctx, bad); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("delete %q: %v", bad, err)
		}
		if _, err := v.Put(ctx, bad, strings.NewReader("x")); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("put %q: %v", bad, err)
		}
	}
}

func TestListPagination(t *testing.T) {
	v := openTest(t, vfs.NewMem(), "/d")
	var want []string
	for i := range 60 {
		name := shardName(i*37, i%3)
		mustPut(t, v, name, make([]byte, i*1000))
		want = append(want, name)
	}
	slices.Sort(want)
	ctx := context.Background()
	for _, limit := range []int{1, 7, 60, 100} {
		var got []string
		after := ""
		for {
			page, more, err := v.List(ctx, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("page of %d > limit %d", len(page), limit)
			}
			for _, s := range page {
				got = append(got, s.Name)
			}
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %d names, want %d in order", limit, len(got), len(want))
		}
	}
	// Sizes come from file sizes; arbitrary "after" strings work.
	page, _, err := v.List(ctx, want[10][:5], 1000)
	if err != nil || len(page) == 0 || page[0].Name <= want[10][:5] {
		t.Fatalf("list after prefix: %v %v", page, err)
	}
	all, _, _ := v.List(ctx, "", 1000)
	for _, s := range all {
		info, _ := v.Stat(ctx, s.Name)
		if info.Size != s.Size {
			t.Fatalf("%s: listed size %d, stat %d", s.Name, s.Size, info.Size)
		}
	}
}

func TestOpenIdentity(t *testing.T) {
	mem := vfs.NewMem()
	if _, err := Open("/d", Options{FS: mem, DiskID: testDisk}); !errors.Is(err, ErrNotVolume) {
		t.Fatalf("open without create: %v", err)
	}
	v := openTest(t, mem, "/d")
	mustPut(t, v, shardName(1, 1), []byte("abc"))
	// One holder at a time: the disk is locked while open.
	if _, err := Open("/d", Options{FS: mem, DiskID: testDisk}); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of an open disk: %v", err)
	}
	v.Close()
	if _, err := Open("/d", Options{FS: mem, DiskID: "other/disk"}); !errors.Is(err, cairn.ErrInvalid) || strings.Contains(err.Error(), "in use") {
		t.Fatalf("open as another disk: %v", err)
	}
	v2, err := Open("/d", Options{FS: mem, DiskID: testDisk})
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, v2, shardName(1, 1), []byte("abc"))
	v2.Close()
	// A non-empty directory that is not a volume is refused.
	mem.MkdirAll("/other", 0o755)
	f, _ := mem.Create("/other/precious")
	f.Close()
	if _, err := Open("/other", Options{FS: mem, DiskID: testDisk, Create: true}); !errors.Is(err, ErrNotVolume) {
		t.Fatalf("format a non-empty dir: %v", err)
	}
	// A damaged identity is corruption.
	rewrite(t, mem, "/d/"+IdentityName, func(b []byte) []byte { return b[:5] })
	if _, err := Open("/d", Options{FS: mem, DiskID: testDisk}); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("open with bad identity: %v", err)
	}
	rewrite(t, mem, "/d/"+IdentityName, func([]byte) []byte {
		return []byte(`{"magic":"cairn-volume","format":1,"disk_id":"node1/disk1","block_size":65536}`)
	})
}

func TestFsckRemovesOldTmpFiles(t *testing.T) {
	mem := vfs.NewMem()
	now := time.Unix(1_000_000, 0)
	mem.SetClock(func() time.Time { return now })
	v := openTest(t, mem, "/d")
	for _, n := range []string{"old.tmp", "young.tmp"} {
		f, _ := mem.Create("/d/tmp/" + n)
		f.Close()
		now = now.Add(time.Hour)
	}
	f, _ := mem.Create("/d/shards/stray")
	f.Close()
	rep, err := v.Fsck(context.Background(), FsckOptions{TmpCutoff: now.Add(-90 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.TmpRemoved, []string{"tmp/old.tmp"}) || !slices.Equal(rep.TmpKept, []string{"tmp/young.tmp"}) ||
		!slices.Equal(rep.Stray, []string{"shards/stray"}) || rep.OK() {
		t.Fatalf("report %+v", rep)
	}
	mem.Remove("/d/shards/stray")
	mem.Remove("/d/tmp/young.tmp")
}

func TestNoSpace(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	mem.SetCapacity(3 * BlockSize)
	name := shardName(1, 0)
	_, err := v.Put(context.Background(), name, bytes.NewReader(make([]byte, 4*BlockSize)))
	if !errors.Is(err, cairn.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("put on a full disk: %v", err)
	}
	if _, err := v.Stat(context.Background(), name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("partial shard visible: %v", err)
	}
	// Not sticky: a shard that fits is written.
	mustPut(t, v, name, make([]byte, BlockSize))
	// MinFree refuses before writing.
	v.Close()
	v2, err := Open("/d", Options{FS: mem, DiskID: testDisk, MinFree: 2 * BlockSize})
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if _, err := v2.Put(context.Background(), shardName(2, 0), strings.NewReader("x")); !errors.Is(err, cairn.ErrNoSpace) {
		t.Fatalf("put below MinFree: %v", err)
	}
	u, err := v2.Usage()
	if err != nil || u.Capacity != 3*BlockSize || u.Free >= 2*BlockSize {
		t.Fatalf("usage %+v %v", u, err)
	}
}

func TestMaxShardSize(t *testing.T) {
	mem := vfs.NewMem()
	v, err := Open("/d", Options{FS: mem, DiskID: testDisk, Create: true, MaxShardSize: BlockSize + 1})
	if err != nil {
		t.Fatal(err)
	}
	registerFsck(t, v, mem)
	if _, err := v.Put(context.Background(), shardName(1, 0), bytes.NewReader(make([]byte, BlockSize+2))); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("oversized put: %v", err)
	}
	mustPut(t, v, shardName(1, 0), make([]byte, BlockSize+1))
}

// cancelAfter returns blocks of data and cancels ctx once n bytes are read.
type cancelAfter struct {
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		return len(p), nil
	}
	k := min(len(p), c.n)
	c.n -= k
	return k, nil
}

func TestCancelledPutLeavesNothing(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := v.Put(ctx, shardName(1, 0), &cancelAfter{n: 3 * BlockSize, cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if _, err := v.Stat(context.Background(), shardName(1, 0)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("shard visible after cancel: %v", err)
	}
	// A failing source is the same.
	_, err = v.Put(context.Background(), shardName(2, 0), io.MultiReader(bytes.NewReader(make([]byte, 100)), iotestErr{}))
	if !errors.Is(err, errSource) {
		t.Fatalf("failing source: %v", err)
	}
}

var errSource = errors.New("source broke")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errSource }

func TestCancelledReadStops(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	mustPut(t, v, shardName(1, 0), make([]byte, 4*BlockSize))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := v.NewReader(ctx, shardName(1, 0), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, BlockSize)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := r.Read(make([]byte, BlockSize)); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	v := openTest(t, vfs.NewMem(), "/d")
	done := make(chan error)
	for w := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			var err error
			for i := range 20 {
				name := shardName(w*100+i%5, w)
				data := randBytes(rng, rng.IntN(3*BlockSize))
				if _, err = v.Put(context.Background(), name, bytes.NewReader(data)); err != nil {
					break
				}
				var got []byte
				if got, err = readRange(v, name, 0, -1); err != nil || !bytes.Equal(got, data) {
					err = errors.Join(err, errors.New("read back differs"))
					break
				}
				if i%3 == 0 {
					if err = v.Delete(context.Background(), name); err != nil {
						break
					}
				}
				if _, _, err = v.List(context.Background(), "", 10); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestTruncatedSourceFails: a source that ends with io.ErrUnexpectedEOF (a
// truncated HTTP body) fails the Put instead of storing a short shard.
func TestTruncatedSourceFails(t *testing.T) {
	v := openTest(t, vfs.NewMem(), "/d")
	for _, n := range []int{0, 10, BlockSize, BlockSize + 10} {
		src := io.MultiReader(bytes.NewReader(make([]byte, n)), errReader{io.ErrUnexpectedEOF})
		if _, err := v.Put(context.Background(), shardName(n, 0), src); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated source of %d bytes: %v", n, err)
		}
		if _, err := v.Stat(context.Background(), shardName(n, 0)); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("short shard stored: %v", err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// On the OS file system the disk lock is flock(2): a second open of an
// open disk fails (from this process or another), and closing releases it.
func TestDiskLockOS(t *testing.T) {
	dir := t.TempDir()
	v, err := Open(dir, Options{DiskID: testDisk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{DiskID: testDisk}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open: %v, want in use", err)
	}
	v.Close()
	v2, err := Open(dir, Options{DiskID: testDisk})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	v2.Close()
}

// Every volume has a volume ID: drawn at format time, the same at every
// open, new when the directory is wiped and formatted again, and added
// once to a volume formatted before volume IDs existed.
func TestVolumeID(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	v, err := Open("/d", Options{FS: mem, DiskID: testDisk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	first := v.VolumeID()
	if len(first) != 32 {
		t.Fatalf("volume ID %q", first)
	}
	v.Close()
	reopen := func() *Volume {
		t.Helper()
		v, err := Open("/d", Options{FS: mem, DiskID: testDisk})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v = reopen()
	if v.VolumeID() != first {
		t.Fatalf("reopened volume has ID %q, was %q", v.VolumeID(), first)
	}
	v.Close()

	// Wiped and formatted again: a new ID.
	mustRemoveAll(t, mem, "/d")
	v, err = Open("/d", Options{FS: mem, DiskID: testDisk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	second := v.VolumeID()
	if second == first || len(second) != 32 {
		t.Fatalf("re-formatted volume has ID %q, the old one %q", second, first)
	}
	v.Close()

	// A volume formatted before volume IDs gets one at its first open and
	// keeps it.
	rewrite(t, mem, "/d/"+IdentityName, func([]byte) []byte {
		return []byte(`{"magic":"cairn-volume","format":1,"disk_id":"node1/disk1","block_size":65536}`)
	})
	v = reopen()
	added := v.VolumeID()
	if len(added) != 32 || added == second {
		t.Fatalf("legacy volume got ID %q", added)
	}
	v.Close()
	v = reopen()
	if v.VolumeID() != added {
		t.Fatalf("legacy volume's ID changed from %q to %q", added, v.VolumeID())
	}
	rep, err := v.Fsck(ctx, FsckOptions{SkipVerify: true})
	if err != nil || !rep.OK() {
		t.Fatalf("fsck: %v %s", err, rep.Problems())
	}

	// The directory swapped under an open volume (another format of the
	// same disk) fails the open volume's fsck.
	rewrite(t, mem, "/d/"+IdentityName, func([]byte) []byte {
		return []byte(`{"magic":"cairn-volume","format":1,"disk_id":"node1/disk1","block_size":65536,"volume_id":"0123456789abcdef0123456789abcdef"}`)
	})
	rep, err = v.Fsck(ctx, FsckOptions{SkipVerify: true})
	if err != nil || rep.OK() || !strings.Contains(rep.Problems(), "0123456789abcdef0123456789abcdef") {
		t.Fatalf("fsck of a swapped directory: %v %q", err, rep.Problems())
	}
	v.Close()
}

func mustRemoveAll(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	if err := vfs.RemoveAll(fsys, dir); err != nil {
		t.Fatal(err)
	}
}
