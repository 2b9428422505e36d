package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"cairn"
	"cairn/meta"
)

// leadership implements meta.Leadership on a concurrency.Session: the
// leader key lives under the session's lease, so losing the session (the
// lease expired, e.g. the process was partitioned for SessionTTL) deletes
// it and lets the next campaigner win.
type leadership struct {
	s    *Store
	sess *concurrency.Session
	el   *concurrency.Election

	done     chan struct{} // closed by watch
	resigned chan struct{} // closed by Resign
	once     sync.Once
	err      error // of the first Resign; written in once
}

// Done implements meta.Leadership.
func (l *leadership) Done() <-chan struct{} { return l.done }

// Resign implements meta.Leadership: it deletes the leader key and revokes
// the session's lease. Done is closed when it returns, even if etcd could
// not be reached (the lease then expires within SessionTTL).
func (l *leadership) Resign(ctx context.Context) error {
	l.once.Do(func() {
		l.err = l.el.Resign(ctx)
		if err := l.sess.Close(); l.err == nil && err != nil && !l.s.errStopped(err) {
			l.err = err
		}
		close(l.resigned)
	})
	<-l.done
	if l.err != nil {
		return fmt.Errorf("resign: %w", l.err)
	}
	return nil
}

// watch closes done when the session ends or Resign is called.
func (l *leadership) watch() {
	defer l.s.wg.Done()
	select {
	case <-l.sess.Done():
	case <-l.resigned:
	}
	l.s.mu.Lock()
	delete(l.s.leaderships, l)
	l.s.mu.Unlock()
	close(l.done)
}

// Campaign implements meta.Store with a concurrency.Election under
// <prefix>election/<role>: candidates queue by the create revision of
// their keys, so they win in the order they started.
func (s *Store) Campaign(ctx context.Context, role, id string) (meta.Leadership, error) {
	if err := meta.CheckCampaign(role, id); err != nil {
		return nil, err
	}
	op := "campaign for " + role
	// Close must end a blocked campaign at once: the client's retries of a
	// read on a closing connection would otherwise run until ctx ends.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	for {
		if err := s.live(); err != nil {
			return nil, err
		}
		l, err := s.campaign(cctx, role, id)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, errSessionLost) && ctx.Err() == nil:
			continue // our lease expired while we waited: queue again
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w", op, ctx.Err())
		default:
			return nil, s.wrap(op, err)
		}
	}
}

var errSessionLost = errors.New("election session lost while campaigning")

func (s *Store) campaign(ctx context.Context, role, id string) (*leadership, error) {
	// Grant with the caller's ctx (NewSession would use the store's).
	g, err := s.cli.Grant(ctx, int64(s.sessionTTL))
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(s.sessionTTL),
		concurrency.WithLease(g.ID), concurrency.WithContext(s.ctx))
	if err != nil {
		return nil, err
	}
	if err := s.revokeStale(ctx, role, id, sess.Lease()); err != nil {
		_ = sess.Close()
		return nil, err
	}
	el := concurrency.NewElection(sess, s.k.election(role))
	if err := el.Campaign(ctx, id); err != nil {
		_ = sess.Close()
		return nil, err
	}
	// Campaign only waits for the keys ahead of ours to go; check that ours
	// is still there (the session may have expired meanwhile).
	resp, err := s.cli.Get(ctx, el.Key())
	if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != el.Rev() {
		_ = sess.Close()
		if err == nil {
			err = errSessionLost
		}
		return nil, err
	}
	l := &leadership{s: s, sess: sess, el: el, done: make(chan struct{}), resigned: make(chan struct{})}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		// Won during Close: give the role up at once (best effort; the
		// lease expires within SessionTTL anyway).
		sess.Orphan()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, _ = s.cli.Revoke(rctx, sess.Lease())
		cancel()
		return nil, meta.ErrClosed
	}
	s.leaderships[l] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go l.watch()
	return l, nil
}

// revokeStale revokes the leases of role's candidate keys that hold id
// and were created before the store was opened: a previous run of this
// process (killed, so it could not resign) whose session would otherwise
// keep the role, or its place in the queue, until its lease expires —
// SessionTTL after the kill, or after etcd restarted, which renews every
// lease. IDs are unique among live processes; should two run with one ID
// anyway, the later revokes the earlier's session once (its new key is
// younger than the later's Open) and the two then queue as any others.
func (s *Store) revokeStale(ctx context.Context, role, id string, mine clientv3.LeaseID) error {
	resp, err := s.cli.Get(ctx, s.k.election(role)+"/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		lease := clientv3.LeaseID(kv.Lease)
		if string(kv.Value) != id || kv.CreateRevision >= s.openRev || lease == mine || lease == clientv3.NoLease {
			continue
		}
		if _, err := s.cli.Revoke(ctx, lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
		s.log.Info("revoked the election session of a previous run", "role", role, "id", id, "key", string(kv.Key))
	}
	return nil
}

// Leader implements meta.Store: the value of the role's candidate key with
// the lowest create revision (what concurrency.Election.Leader reads).
func (s *Store) Leader(ctx context.Context, role string) (string, error) {
	op := "leader of " + role
	if err := s.live(); err != nil {
		return "", err
	}
	resp, err := s.cli.Get(ctx, s.k.election(role)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	return string(resp.Kvs[0].Value), nil
}
