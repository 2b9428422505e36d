package node

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/volume"
	"cairn/node/wire"
)

func TestPutGetDeleteListStat(t *testing.T) {
	d1 := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	d2 := openDisk(t, "node1/disk2", vfs.Default, t.TempDir()+"/d2")
	n := newTestNode(t, d1, d2)
	c := n.client
	ctx := context.Background()
	for _, d := range []*disk{d1, d2} {
		var names []string
		for i, size := range []int{0, 1, volume.BlockSize, 3*volume.BlockSize + 11} {
			name := shardName(i, i)
			data := randBytes(uint64(i), size)
			info, err := c.PutShard(ctx, d.id, name, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(size) || info.CRC != crc32.Checksum(data, castagnoli) {
				t.Fatalf("put info %+v", info)
			}
			names = append(names, name)
			got, err := readAll(t, c, d.id, name, 0, -1)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("get %s (%d bytes): %v", name, size, err)
			}
			for _, r := range [][2]int64{{0, 0}, {int64(size) / 3, int64(size) / 2}, {int64(size), -1}, {int64(size / 2), -1}, {int64(size / 2), -7}} {
				got, err := readAll(t, c, d.id, name, r[0], r[1])
				end := int64(size)
				if r[1] >= 0 {
					end = r[0] + r[1]
				}
				if err != nil || !bytes.Equal(got, data[r[0]:end]) {
					t.Fatalf("range %v of %d: %v", r, size, err)
				}
			}
			if _, err := readAll(t, c, d.id, name, int64(size)+1, -1); !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("range past the end: %v", err)
			}
			if _, err := readAll(t, c, d.id, name, 0, int64(size)+1); !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("range past the end: %v", err)
			}
		}
		slices.Sort(names)
		var listed []string
		after := ""
		for {
			page, more, err := c.ListShards(ctx, d.id, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				listed = append(listed, s.Name)
			}
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		if !slices.Equal(listed, names) {
			t.Fatalf("listed %v, want %v", listed, names)
		}
		st, err := c.DiskStat(ctx, d.id)
		if err != nil || st.ID != d.id || st.Capacity <= 0 || st.Free <= 0 || st.Free > st.Capacity || st.Broken != "" {
			t.Fatalf("stat %+v %v", st, err)
		}
		for _, name := range names {
			if err := c.DeleteShard(ctx, d.id, name); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.DeleteShard(ctx, d.id, names[0]); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("delete again: %v", err)
		}
		if _, err := c.GetShard(ctx, d.id, names[0], 0, -1); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
	}
	// Unknown disk on this node.
	n.disks = append(n.disks, &disk{id: "node1/nope"})
	if _, err := c.DiskStat(ctx, "node1/nope"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("unknown disk: %v", err)
	}
	// Health lists both disks.
	resp, body := n.raw(t, "GET", "/v1/health", testSecret, nil)
	if resp.StatusCode != 200 || !contains(body, `"ok":true`, "node1/disk1", "node1/disk2") {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
}

func TestAuth(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	ctx := context.Background()
	mustPutShard(t, n.client, d.id, shardName(1, 0), []byte("data"))
	for _, secret := range []string{"wrong", "", testSecret + "x", testSecret[:5]} {
		c := NewClient(secret, n.resolve, nil)
		_, err := c.PutShard(ctx, d.id, shardName(2, 0), strings.NewReader("x"))
		if !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("put with secret %q: %v", secret, err)
		}
		var ne *wire.Error
		if !errors.As(err, &ne) || ne.Status != http.StatusUnauthorized {
			t.Fatalf("error %#v", err)
		}
		if _, err := c.GetShard(ctx, d.id, shardName(1, 0), 0, -1); !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("get: %v", err)
		}
		if err := c.DeleteShard(ctx, d.id, shardName(1, 0)); !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("delete: %v", err)
		}
		if _, _, err := c.ListShards(ctx, d.id, "", 0); !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("list: %v", err)
		}
		if _, err := c.DiskStat(ctx, d.id); !errors.Is(err, cairn.ErrAuth) {
			t.Fatalf("stat: %v", err)
		}
	}
	resp, _ := n.raw(t, "GET", "/v1/health", "", nil)
	if resp.StatusCode != 401 {
		t.Fatalf("health without secret: %d", resp.StatusCode)
	}
	if err := probe(ctx, n.client, d.id, shardName(2, 0)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("unauthorized put stored something: %v", err)
	}
}

// probe checks a shard exists with a GET of nothing.
func probe(ctx context.Context, c *Client, disk cairn.DiskID, name string) error {
	r, err := c.GetShard(ctx, disk, name, 0, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	return err
}
