package etcdmeta

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNoSecretCheck is returned by SecretCheck for a store that holds no
// secret check value yet.
var ErrNoSecretCheck = errors.New("no secret check value stored")

// SecretCheck returns the cluster's secret check value (docs/design/meta.md,
// "Secret check"), or ErrNoSecretCheck if none was recorded. The value is
// opaque to the store: callers derive it from the cluster secret (never
// the secret itself) and compare.
func (s *Store) SecretCheck(ctx context.Context) (string, error) {
	const op = "read the secret check value"
	if err := s.live(); err != nil {
		return "", err
	}
	resp, err := s.cli.Get(ctx, s.k.secretCheck())
	if err != nil {
		return "", s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%s: %w", op, ErrNoSecretCheck)
	}
	return string(resp.Kvs[0].Value), nil
}

// RecordSecretCheck stores v as the cluster's secret check value unless
// one is stored already, and returns the stored value: v, or the one
// recorded before (which the caller compares with v). The first record
// wins, so the check is only as good as the secret of the first process to
// record it; cairn init gives every process the same secret.
func (s *Store) RecordSecretCheck(ctx context.Context, v string) (string, error) {
	const op = "record the secret check value"
	if v == "" {
		return "", fmt.Errorf("%s: empty value", op)
	}
	if err := s.live(); err != nil {
		return "", err
	}
	k := s.k.secretCheck()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, v)).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return "", s.wrap(op, err)
	}
	if resp.Succeeded {
		return v, nil
	}
	return string(resp.Responses[0].GetResponseRange().Kvs[0].Value), nil
}
