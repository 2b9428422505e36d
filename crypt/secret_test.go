package crypt

import (
	"crypto/rand"
	"errors"
	"testing"
)

// A sealed secret opens only with the key of the same cluster secret and
// for the same user and access key.
func TestSealSecret(t *testing.T) {
	k, err := UserSealKey("cluster-secret-1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := UserSealKey("cluster-secret-2")
	sealed, err := SealSecret(k, "alice", "AKALICE", "s3cr3t-key", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := OpenSecret(k, sealed, "alice", "AKALICE"); err != nil || got != "s3cr3t-key" {
		t.Fatalf("OpenSecret = %q, %v", got, err)
	}
	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 1
	for _, c := range []struct {
		name     string
		key      []byte
		sealed   []byte
		user, ak string
	}{
		{"other cluster secret", other, sealed, "alice", "AKALICE"},
		{"other user", k, sealed, "bob", "AKALICE"},
		{"other access key", k, sealed, "alice", "AKBOB"},
		{"changed bytes", k, flipped, "alice", "AKALICE"},
		{"cut", k, sealed[:10], "alice", "AKALICE"},
	} {
		if _, err := OpenSecret(c.key, c.sealed, c.user, c.ak); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: OpenSecret error %v, want ErrAuthentication", c.name, err)
		}
	}
	if _, err := UserSealKey(""); err == nil {
		t.Error("UserSealKey of an empty secret succeeded")
	}
}
