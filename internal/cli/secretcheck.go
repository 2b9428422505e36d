package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

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
