package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	etcdmeta "cairn/meta/etcd"
)

// ErrWrongSecret is returned when a process's cluster secret does not
// match the secret check value stored in the metadata: the secret was
// copied from another cluster, or mistyped.
var ErrWrongSecret = errors.New("wrong cluster secret")

// secretCheckMessage is the fixed string whose HMAC under the cluster
// secret is the check value (docs/design/meta.md, "Secret check").
const secretCheckMessage = "cairn secret check v1"

// secretCheckValue is the check value of secret: "hmac-sha256:" and the
// hex HMAC-SHA256 of secretCheckMessage keyed with the secret. It tells a
// wrong secret from the right one without revealing either.
func secretCheckValue(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(secretCheckMessage))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// checkSecret compares secret with the check value in store. With record,
// a store without one gets secret's (nodes and gateways record it, the
// first one wins); without, a store without one passes (CLI commands only
// read). from says where the secret came from, for the error.
func checkSecret(ctx context.Context, store *etcdmeta.Store, secret, from string, record bool) error {
	want := secretCheckValue(secret)
	var got string
	var err error
	if record {
		got, err = store.RecordSecretCheck(ctx, want)
	} else {
		got, err = store.SecretCheck(ctx)
		if errors.Is(err, etcdmeta.ErrNoSecretCheck) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("checking the cluster secret: %w", err)
	}
	if !hmac.Equal([]byte(got), []byte(want)) {
		return fmt.Errorf("%w: the secret from %s is not this cluster's (the metadata store holds the check value of another secret); "+
			"use the secret of the cluster's client.conf, as written by cairn init or cairn server", ErrWrongSecret, from)
	}
	return nil
}

// validSecretCheck reports whether v has the form of a check value.
func validSecretCheck(v string) bool {
	h, ok := strings.CutPrefix(v, "hmac-sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// recordSecretCheck records the check value v in the metadata at
// endpoints (a client with opts) unless one is there; a different one there is ErrWrongSecret.
// A metadata member given one (by cairn init) records it at start, so that
// the check holds from the cluster's first process on.
func recordSecretCheck(ctx context.Context, endpoints []string, opts etcdmeta.Options, v, from string) error {
	store, err := etcdmeta.Open(ctx, endpoints, opts)
	if err != nil {
		return fmt.Errorf("recording the secret check value: %w", err)
	}
	defer store.Close()
	got, err := store.RecordSecretCheck(ctx, v)
	if err != nil {
		return fmt.Errorf("recording the secret check value: %w", err)
	}
	if got != v {
		return fmt.Errorf("%w: the secret check value from %s is not the one this metadata cluster holds: the config belongs to another cluster", ErrWrongSecret, from)
	}
	return nil
}
