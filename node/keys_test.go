package node

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/wire"
)

// Each role's key may make exactly the requests of its role (roleOps)
// over a real socket: the others are refused with 403 forbidden, naming
// the key, its role and what it may do.
func TestRoleKeys(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	var logged syncBuffer
	n.h.log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	addr := n.srv.Listener.Addr().String()
	ctx := context.Background()
	held := shardName(7, 0)
	mustPutShard(t, n.client, d.id, held, []byte("kept"))

	// Each request kind, made by c. Success or a refusal for another
	// reason than the role (a repair of a missing helper) both count as
	// allowed.
	calls := map[op]func(c *Client) error{
		opPut: func(c *Client) error {
			_, err := c.PutShard(ctx, d.id, shardName(8, 0), bytes.NewReader([]byte("new")))
			return err
		},
		opGet: func(c *Client) error {
			_, err := readAll(t, c, d.id, held, 0, -1)
			return err
		},
		opDelete: func(c *Client) error {
			err := c.DeleteShard(ctx, d.id, shardName(9, 0))
			if errors.Is(err, cairn.ErrNotFound) {
				return nil
			}
			return err
		},
		opList: func(c *Client) error {
			_, _, err := c.ListShards(ctx, d.id, "", 10)
			return err
		},
		opStat: func(c *Client) error {
			_, err := c.DiskStat(ctx, d.id)
			return err
		},
		opHealth: func(c *Client) error {
			req, _ := http.NewRequest(http.MethodGet, n.srv.URL+wire.HealthPath, nil)
			sign(req, &c.key, time.Now(), newNonce(), emptySHA256)
			resp, b := do(t, req)
			if resp.StatusCode != http.StatusOK {
				return errors.New(b)
			}
			return nil
		},
		opPush: func(c *Client) error {
			_, err := c.Push(ctx, missingHelperSpec(addr, d.id))
			return allowedRepair(err)
		},
		opPull: func(c *Client) error {
			_, err := c.Pull(ctx, addr, missingHelperSpec(addr, d.id))
			return allowedRepair(err)
		},
		opRAIDPRead: func(c *Client) error {
			err := c.ReadLstor(ctx, d.id, make([]byte, 1), 0)
			if errors.Is(err, cairn.ErrNotFound) { // no_lstor: the node took the request
				return nil
			}
			return err
		},
	}
	for _, role := range Roles {
		key, err := DeriveKey(testSecret, KeyID{Role: role, Name: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		c := NewKeyClient(key, n.resolve, nil)
		for o, call := range calls {
			err := call(c)
			switch {
			case role.allows(o) && err != nil:
				t.Errorf("%s may %s, but: %v", role, o, err)
			case !role.allows(o) && !forbidden(err):
				t.Errorf("%s may not %s, but got %v, want 403 forbidden", role, o, err)
			case !role.allows(o) && !contains(err.Error(), "key "+string(role)+"/alice", "may not "+string(o), "it may: "):
				t.Errorf("%s %s: refused with %q, want the key, the request kind and what the role may do named", role, o, err)
			}
		}
	}
	if l := logged.String(); !strings.Contains(l, "key_id=reader/alice request=put method=PUT") || strings.Contains(l, "key_id=admin/") {
		t.Errorf("refusals logged as:\n%s\nwant each at WARN with its key and request, none for admin", l)
	}
	// The reader's refusals left the disk as it was.
	if got, err := readAll(t, n.client, d.id, held, 0, -1); err != nil || string(got) != "kept" {
		t.Fatalf("held shard: %q %v", got, err)
	}
}

// forbidden reports whether err is a node's 403 forbidden.
func forbidden(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeForbidden && we.Status == http.StatusForbidden && errors.Is(err, cairn.ErrAuth)
}

// allowedRepair is nil for a repair refused for its missing helper (the
// node took the request), else err.
func allowedRepair(err error) error {
	if errors.Is(err, cairn.ErrNotFound) {
		return nil
	}
	return err
}

// missingHelperSpec is a valid repair whose one helper shard does not
// exist.
func missingHelperSpec(addr string, disk cairn.DiskID) wire.RepairSpec {
	return wire.RepairSpec{Size: 4, Unit: 4,
		Hops:  []wire.Hop{{Addr: addr, Disk: disk, Shard: shardName(10, 0), Coeffs: []byte{1}}},
		Store: []wire.Target{{Addr: addr, Disk: disk, Shard: shardName(10, 1)}}}
}

// A derived key signs only as its own principal: a reader's key claiming
// to be a gateway or another reader, or signing for another node than the
// one it is sent to, is refused (401 wrong signature); so is a signature
// without a key id (the format before keys).
func TestKeyCannotPassAsAnother(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	reader, err := DeriveKey(testSecret, KeyID{Role: RoleReader, Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		prep func(*http.Request)
		want string
	}{
		{"reader key as gateway", func(r *http.Request) {
			k := reader
			k.ID.Role = RoleGateway
			sign(r, &k, time.Now(), newNonce(), emptySHA256)
		}, "wrong signature by gateway/alice"},
		{"reader key as another reader", func(r *http.Request) {
			k := reader
			k.ID.Name = "bob"
			sign(r, &k, time.Now(), newNonce(), emptySHA256)
		}, "wrong signature by reader/bob"},
		{"credential rewritten after signing", func(r *http.Request) {
			sign(r, &reader, time.Now(), newNonce(), emptySHA256)
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "reader/", "admin/", 1))
		}, "wrong signature by admin/alice"},
		{"signed for another node", func(r *http.Request) {
			r.Host = "node2:9100"
			sign(r, &reader, time.Now(), newNonce(), emptySHA256)
			r.Host = r.URL.Host
		}, "wrong signature by reader/alice"},
		{"no key id (the format before keys)", func(r *http.Request) {
			sign(r, &reader, time.Now(), newNonce(), emptySHA256)
			_, sig, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
			r.Header.Set("Authorization", wire.AuthScheme+" Signature="+sig)
		}, "names no key"},
		{"unknown role", func(r *http.Request) {
			sign(r, &reader, time.Now(), newNonce(), emptySHA256)
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "reader/", "root/", 1))
		}, "credential: invalid argument: unknown role"},
		{"two Authorization headers", func(r *http.Request) {
			sign(r, &reader, time.Now(), newNonce(), emptySHA256)
			r.Header.Add("Authorization", r.Header.Get("Authorization"))
		}, "more than once"},
	} {
		req, _ := http.NewRequest(http.MethodGet, n.srv.URL+wire.DiskPath(d.id), nil)
		c.prep(req)
		resp, b := do(t, req)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s, want 401 %q", c.what, resp.StatusCode, b, c.want)
		}
	}
	// The reader's own key, signed for this node, is served.
	req, _ := http.NewRequest(http.MethodGet, n.srv.URL+wire.DiskPath(d.id), nil)
	sign(req, &reader, time.Now(), newNonce(), emptySHA256)
	if resp, b := do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("reader stat: %d %s", resp.StatusCode, b)
	}
}

func TestKeyParse(t *testing.T) {
	k, err := DeriveKey("secret", KeyID{Role: RoleReader, Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKey(k.String())
	if err != nil || got != k {
		t.Fatalf("ParseKey(%s) = %v, %v", k.ID, got.ID, err)
	}
	other, _ := DeriveKey("secret", KeyID{Role: RoleGateway, Name: "alice"})
	if other.key == k.key {
		t.Fatal("a reader and a gateway of one name share a key")
	}
	hexKey := k.String()[len("reader/alice:"):]
	for _, c := range []struct{ in, want string }{
		{"", "want ROLE/NAME:"},
		{"reader/alice", "want ROLE/NAME:"},
		{"reader:" + hexKey, "want ROLE/NAME"},
		{"root/alice:" + hexKey, `unknown role "root"`},
		{"reader/:" + hexKey, "want 1 to 64"},
		{"reader/" + strings.Repeat("a", 65) + ":" + hexKey, "want 1 to 64"},
		{"reader/al ice:" + hexKey, `' ' is not one of`},
		{"reader/a/b:" + hexKey, `'/' is not one of`},
		{"reader/alice:" + hexKey[:62], "64 lower-case hex"},
		{"reader/alice:" + strings.ToUpper(hexKey), "64 lower-case hex"},
		{"reader/alice:" + hexKey[:62] + "zz", "64 lower-case hex"},
	} {
		_, err := ParseKey(c.in)
		if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKey(%q) = %v, want ErrInvalid %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), hexKey[:16]) {
			t.Errorf("ParseKey(%q): the error quotes the key: %v", c.in, err)
		}
	}
	if _, err := DeriveKey("", KeyID{Role: RoleReader, Name: "a"}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("empty secret: %v", err)
	}
	for in, want := range map[string]string{"node1": "node1", "": "unnamed", "a b/c": "a-b-c", strings.Repeat("x", 70): strings.Repeat("x", 64)} {
		if got := KeyName(in); got != want {
			t.Errorf("KeyName(%q) = %q, want %q", in, got, want)
		}
		if err := (KeyID{Role: RoleNode, Name: KeyName(in)}).Validate(); err != nil {
			t.Errorf("KeyName(%q) is not valid: %v", in, err)
		}
	}
}

// A path that is not in canonical form (FuzzHandlerRequest found "//0")
// is refused with a protocol error, where the mux would have answered a
// redirect; paths with escaped slashes and dots in a name are served.
func TestUncleanPathRefused(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	for _, p := range []string{"/v1/disks//shards", "/v1/disks/node1%2Fdisk1/../node1%2Fdisk1", "/v1//health", "/v1/health/."} {
		resp, b := n.raw(t, http.MethodGet, p, testSecret, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "not in canonical form") {
			t.Errorf("GET %s: %d %s, want 400 invalid", p, resp.StatusCode, b)
		}
	}
	if resp, b := n.raw(t, http.MethodGet, wire.DiskPath(d.id), testSecret, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("stat: %d %s", resp.StatusCode, b)
	}
}

// Config.Skew and ReplayEntries (the --auth-skew and --auth-replay-entries
// of cairn node and cairn server) reach the server's handler.
func TestServerAuthLimits(t *testing.T) {
	mem := vfs.NewMem()
	s, err := NewServer(Config{Node: "n", Secret: testSecret, Registry: newFakeRegistry(), Skew: time.Minute, ReplayEntries: 2,
		Disks: []DiskConfig{{ID: "n/d", Path: "/d", FS: mem}}})
	if err != nil {
		t.Fatal(err)
	}
	fsckCleanup(t, mem, "/d", "n/d")
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := testKey(testSecret)
	stat := func(at time.Time) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+wire.DiskPath("n/d"), nil)
		sign(req, &key, at, newNonce(), emptySHA256)
		resp, b := do(t, req)
		return resp.StatusCode, b
	}
	if st, b := stat(time.Now().Add(-2 * time.Minute)); st != http.StatusUnauthorized || !strings.Contains(b, "window ±1m0s") {
		t.Fatalf("signed 2 minutes ago with a 1-minute window: %d %s", st, b)
	}
	for i := range 2 {
		if st, b := stat(time.Now()); st != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, st, b)
		}
	}
	if st, b := stat(time.Now()); st != http.StatusServiceUnavailable || !strings.Contains(b, "replay cache full (2 nonces") {
		t.Fatalf("a third nonce with room for 2: %d %s", st, b)
	}
}

// syncBuffer is a bytes.Buffer safe for the handler's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
