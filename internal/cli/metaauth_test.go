package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	etcdmeta "cairn/meta/etcd"
)

// A config with https metadata endpoints needs meta_tls; meta_user makes
// the client authenticate with the password derived from the secret,
// which differs per secret and is not the secret's check value.
func TestMetaOptions(t *testing.T) {
	c := ClientConfig{Meta: []string{"https://10.0.0.1:9379"}, Secret: "s1"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "meta_tls") {
		t.Fatalf("https endpoints without meta_tls: %v, want an error naming meta_tls", err)
	}
	c.Meta = []string{"http://127.0.0.1:9379"}
	c.MetaUser = etcdmeta.User
	o, err := c.metaOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.Username != etcdmeta.User || o.Password != metaPassword("s1") || o.TLS != nil {
		t.Fatalf("options %+v", o)
	}
	p1, p2 := metaPassword("s1"), metaPassword("s2")
	if len(p1) != 64 || p1 == p2 || strings.Contains(secretCheckValue("s1"), p1) {
		t.Fatalf("passwords %q, %q: want 64 hex digits, distinct per secret and unlike the check value", p1, p2)
	}
	c.MetaTLS = &NodeTLSFiles{CA: "missing.pem", Cert: "c.pem", Key: "k.pem"}
	if _, err := c.metaOptions(); err == nil || !strings.Contains(err.Error(), "meta_tls") {
		t.Fatalf("unreadable meta_tls: %v, want an error naming meta_tls", err)
	}
}

// A refused password is a wrong secret; a refusal of a client without a
// user says the config lacks one.
func TestMetaOpenError(t *testing.T) {
	eps := []string{"https://h1:9379"}
	err := metaOpenError(fmt.Errorf("open: %w", rpctypes.ErrAuthFailed), eps, etcdmeta.Options{Username: etcdmeta.User}, "x.conf")
	if !errors.Is(err, ErrWrongSecret) || !strings.Contains(err.Error(), "x.conf") {
		t.Fatalf("refused password: %v, want ErrWrongSecret naming x.conf", err)
	}
	err = metaOpenError(rpctypes.ErrUserEmpty, eps, etcdmeta.Options{}, "x.conf")
	if errors.Is(err, ErrWrongSecret) || !strings.Contains(err.Error(), "meta_user") || !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Fatalf("no user: %v, want an error naming meta_user", err)
	}
	if err := metaOpenError(errors.New("dial"), eps, etcdmeta.Options{}, "x.conf"); !strings.Contains(err.Error(), "connecting to the metadata store") {
		t.Fatalf("other: %v", err)
	}
}
