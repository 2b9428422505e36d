package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client config made by `cairn admin node-key` holds a reader's key and
// no secret: with it a CLI reads objects, but a put is refused by the
// nodes (403 forbidden naming the key) and what needs the secret says so.
// The admin's config, holding the secret, goes on working as before.
func TestNodeKeyConfig(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("hello, reader"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.CLI(t, "mb", "bkt")
	s.CLI(t, "put", src, "bkt/k")

	conf := s.CLI(t, "admin", "node-key", "--role", "reader", "--name", "alice")
	if strings.Contains(conf, `"secret"`) || !strings.Contains(conf, `"node_key": "reader/alice:`) {
		t.Fatalf("node-key printed:\n%s", conf)
	}
	reader := filepath.Join(dir, "alice.conf")
	if err := os.WriteFile(reader, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if out, errs, err := run(t, "get", "bkt/k", dst, "--config", reader); err != nil {
		t.Fatalf("reader get: %v\n%s%s", err, out, errs)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "hello, reader" {
		t.Fatalf("reader read %q %v", b, err)
	}
	_, _, err := run(t, "put", src, "bkt/k2", "--config", reader)
	if err == nil || !strings.Contains(err.Error(), "reader/alice") || !strings.Contains(err.Error(), "may not put") {
		t.Fatalf("reader put: %v, want refused naming the key and the request", err)
	}
	_, _, err = run(t, "admin", "user", "list", "--config", reader)
	if err == nil || !strings.Contains(err.Error(), "needs the cluster secret") {
		t.Fatalf("reader user list: %v, want the secret asked for", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--role", "root", "--name", "x"}, "unknown role"},
		{[]string{"--role", "reader", "--name", "a/b"}, "is not one of"},
		{[]string{"--role", "reader"}, "needs --role and --name"},
	} {
		_, _, err := run(t, append(append([]string{"admin", "node-key"}, c.args...), "--config", s.Conf)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("node-key %v: %v, want %q", c.args, err, c.want)
		}
	}
	_, _, err = run(t, "admin", "node-key", "--role", "reader", "--name", "bob", "--config", reader)
	if err == nil || !strings.Contains(err.Error(), "holds no cluster secret") {
		t.Fatalf("node-key from a reader's config: %v", err)
	}
	s.CLI(t, "get", "bkt/k", filepath.Join(dir, "again"))
}

// A config holds the secret or one node key, never both, and a node key
// cannot reach an etcd that wants the secret-derived password.
func TestClientConfigNodeKey(t *testing.T) {
	key := "reader/alice:" + strings.Repeat("0", 64)
	meta := []string{"http://127.0.0.1:9379"}
	for _, c := range []struct {
		cfg  ClientConfig
		want string // "" for valid
	}{
		{ClientConfig{Meta: meta, NodeKey: key}, ""},
		{ClientConfig{Meta: meta, Secret: "s"}, ""},
		{ClientConfig{Meta: meta}, "no cluster secret (\"secret\") and no node key"},
		{ClientConfig{Meta: meta, Secret: "s", NodeKey: key}, "both a cluster secret"},
		{ClientConfig{Meta: meta, NodeKey: "reader/alice"}, "want ROLE/NAME:<64 hex digits>"},
		{ClientConfig{Meta: meta, NodeKey: key, MetaUser: "cairn"}, "password is derived from the cluster secret"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
