package etcdmeta_test

import (
	"errors"
	"testing"

	etcdmeta "cairn/meta/etcd"
)

// TestSecretCheck: the first recorded value wins and is what later
// records and reads return; a fresh store has none.
func TestSecretCheck(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	s := open(t, srv.Endpoints(), "")
	defer s.Close()
	ctx := t.Context()
	if _, err := s.SecretCheck(ctx); !errors.Is(err, etcdmeta.ErrNoSecretCheck) {
		t.Fatalf("fresh store: SecretCheck err = %v, want ErrNoSecretCheck", err)
	}
	if _, err := s.RecordSecretCheck(ctx, ""); err == nil {
		t.Fatal("RecordSecretCheck(\"\") succeeded")
	}
	for _, tc := range []struct{ record, want string }{{"first", "first"}, {"second", "first"}, {"first", "first"}} {
		got, err := s.RecordSecretCheck(ctx, tc.record)
		if err != nil || got != tc.want {
			t.Fatalf("RecordSecretCheck(%q) = %q, %v; want %q", tc.record, got, err, tc.want)
		}
	}
	if got, err := s.SecretCheck(ctx); err != nil || got != "first" {
		t.Fatalf("SecretCheck = %q, %v; want first", got, err)
	}
	other := open(t, srv.Endpoints(), "/other/")
	defer other.Close()
	if _, err := other.SecretCheck(ctx); !errors.Is(err, etcdmeta.ErrNoSecretCheck) {
		t.Fatalf("another prefix: SecretCheck err = %v, want ErrNoSecretCheck", err)
	}
}
