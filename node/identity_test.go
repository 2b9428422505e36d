package node

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/wire"
)

// TestPutIdentity: a PUT with an identity stores it in the file (the
// reply says its length); one without stores none; an identity that is
// not base64, does not decode or names another file is refused with
// ErrInvalid and nothing is stored.
func TestPutIdentity(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	ctx := context.Background()
	with, without := shardName(1, 2), shardName(2, 0)
	ident := identOf(t, with)
	info, err := n.client.PutShardIdentified(ctx, d.id, with, ident, bytes.NewReader([]byte("data")))
	if err != nil || info.Ident != len(ident) {
		t.Fatalf("put with identity: %+v %v", info, err)
	}
	id, vi, ok, err := d.v.Identity(ctx, with)
	if err != nil || !ok || id.Name() != with || vi.Ident != len(ident) {
		t.Fatalf("stored identity: %+v %+v %v %v", id, vi, ok, err)
	}
	if info, err := n.client.PutShard(ctx, d.id, without, bytes.NewReader([]byte("data"))); err != nil || info.Ident != 0 {
		t.Fatalf("put without identity: %+v %v", info, err)
	}
	if _, _, ok, err := d.v.Identity(ctx, without); err != nil || ok {
		t.Fatalf("a shard put without identity has one: %v %v", ok, err)
	}

	// A listing with identities has each file's footer and identity.
	list, more, err := n.client.ListIdentities(ctx, d.id, "", 0)
	if err != nil || more || len(list) != 2 {
		t.Fatalf("list with identities: %+v %v %v", list, more, err)
	}
	for _, st := range list {
		switch {
		case st.Name == with && (st.Identity == nil || *st.Identity != id || st.Ident != len(ident) || st.Size != 4 || st.CRC != info.CRC || st.Written.IsZero()):
			t.Errorf("listed %+v, want identity %+v", st, id)
		case st.Name == without && (st.Identity != nil || st.Size != 4 || st.Error != ""):
			t.Errorf("listed %+v, want no identity", st)
		}
	}

	bad := shardName(3, 1)
	for _, c := range []struct {
		what, want string
		ident      []byte
	}{
		{"another file's", "names shard", identOf(t, shardName(3, 2))},
		{"garbage", "checksum", []byte("{\"bucket\":\"b\"}abcd")},
	} {
		_, err := n.client.PutShardIdentified(ctx, d.id, bad, c.ident, bytes.NewReader([]byte("x")))
		if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s identity: %v, want ErrInvalid saying %q", c.what, err, c.want)
		}
	}
	// A header that is not base64, sent by hand.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, n.srv.URL+wire.ShardPath(d.id, bad), strings.NewReader("x"))
	req.Header.Set(wire.HeaderIdentity, "!!not base64!!")
	signTest(t, req, testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("identity header not base64: status %d", resp.StatusCode)
	}
	if _, err := d.v.Stat(ctx, bad); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a refused PUT stored a shard: %v", err)
	}
}
