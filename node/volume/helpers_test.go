package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/vfs"
)

const testDisk cairn.DiskID = "node1/disk1"

// openTest opens (creating) a volume and registers the fsck cleanup that
// every test opening a volume has: at the end the volume must have no
// corrupt shard, no stray file and no temporary file.
func openTest(t testing.TB, fsys vfs.FS, dir string) *Volume {
	t.Helper()
	v, err := Open(dir, Options{FS: fsys, DiskID: testDisk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	registerFsck(t, v, fsys)
	return v
}

func registerFsck(t testing.TB, v *Volume, fsys vfs.FS) {
	t.Cleanup(func() { mustFsck(t, v, fsys) })
}

func mustFsck(t testing.TB, v *Volume, fsys vfs.FS) {
	t.Helper()
	tmps, err := fsys.List(path.Join(v.dir, TmpDir))
	if err != nil {
		t.Errorf("fsck: list tmp: %v", err)
	} else if len(tmps) > 0 {
		t.Errorf("fsck: temporary files left behind: %v", tmps)
	}
	if err := v.check(false); errors.Is(err, ErrClosed) {
		if v, err = Open(v.dir, Options{FS: fsys, DiskID: v.id}); err != nil {
			t.Errorf("fsck: reopen: %v", err)
			return
		}
		defer v.Close()
	}
	rep, err := v.Fsck(context.Background(), FsckOptions{})
	if err != nil {
		t.Errorf("fsck: %v", err)
		return
	}
	if !rep.OK() {
		t.Errorf("fsck found problems:\n%s", rep.Problems())
	}
}

// shardName returns a valid shard name for (n, i).
func shardName(n, i int) string { return cairn.ShardName(fmt.Sprintf("%032x", n*7919+1), i) }

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// identFor returns an encoded identity naming shard file name (of object
// "b/k-<version>"), as writers send it.
func identFor(t testing.TB, name string) []byte {
	t.Helper()
	version, row, _ := strings.Cut(name, ".")
	r, err := strconv.Atoi(row)
	if err != nil {
		t.Fatalf("shard name %q: %v", name, err)
	}
	b, err := cairn.ShardIdentity{Bucket: "b", Key: "k-" + version, Version: version, Row: r,
		Policy: "rs-4-2", BlockSize: 1 << 20, PG: 3}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustPutV1 stores data as shard name without an identity (format 1).
func mustPutV1(t testing.TB, v *Volume, name string, data []byte) ShardInfo {
	t.Helper()
	info, err := v.Put(context.Background(), name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
	if info != (ShardInfo{Size: int64(len(data)), CRC: crcOf(data)}) {
		t.Fatalf("put %s: info %+v, want size %d crc %08x", name, info, len(data), crcOf(data))
	}
	return info
}

// mustPut stores data as shard name with an identity (the current format).
func mustPut(t testing.TB, v *Volume, name string, data []byte) ShardInfo {
	t.Helper()
	ident := identFor(t, name)
	info, err := v.PutIdentified(context.Background(), name, ident, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
	if info.Size != int64(len(data)) || info.CRC != crcOf(data) || info.Ident != len(ident) {
		t.Fatalf("put %s: info %+v, want size %d crc %08x", name, info, len(data), crcOf(data))
	}
	return info
}

func readRange(v *Volume, name string, off, n int64) ([]byte, error) {
	r, err := v.NewReader(context.Background(), name, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func mustGet(t testing.TB, v *Volume, name string, want []byte) {
	t.Helper()
	got, err := readRange(v, name, 0, -1)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("get %s: %d bytes differ from the %d put", name, len(got), len(want))
	}
}

// rewrite replaces a file's bytes through fsys (synced), to corrupt it.
func rewrite(t testing.TB, fsys vfs.FS, p string, edit func([]byte) []byte) {
	t.Helper()
	f, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	f.Close()
	b = edit(b)
	w, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	w.Close()
}
