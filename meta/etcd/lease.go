package etcdmeta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// KeepAlive implements meta.Store: it grants an etcd lease of ttl (whole
// seconds, at least 1; the server raises it to its minimum, 1.5 election
// timeouts) and puts <prefix>alive/<holder> under it, then returns. A
// goroutine renews the lease until ctx ends or Close; if the lease is lost
// meanwhile (it expired during a partition) it grants a new one and puts
// the entry again. When renewal stops the lease is not revoked: the entry
// expires ttl later, exactly as if the process had died.
func (s *Store) KeepAlive(ctx context.Context, holder string, ttl time.Duration) error {
	if holder == "" || ttl <= 0 {
		return fmt.Errorf("keep alive %q for %v: %w: need a holder and a positive ttl", holder, ttl, cairn.ErrInvalid)
	}
	if err := s.live(); err != nil {
		return err
	}
	secs := int64(ttlSeconds(ttl))
	id, err := s.announce(ctx, holder, secs)
	if err != nil {
		return s.wrap("keep alive "+holder, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("keep alive %s: %w", holder, meta.ErrClosed)
	}
	s.wg.Add(1)
	go s.renew(ctx, holder, secs, id)
	return nil
}

// announce grants a lease and puts the holder's entry under it.
func (s *Store) announce(ctx context.Context, holder string, secs int64) (clientv3.LeaseID, error) {
	g, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return 0, err
	}
	if _, err := s.cli.Put(ctx, s.k.holder(holder), holder, clientv3.WithLease(g.ID)); err != nil {
		rctx, cancel := context.WithTimeout(s.ctx, time.Second)
		_, _ = s.cli.Revoke(rctx, g.ID) // best effort; it expires anyway
		cancel()
		return 0, err
	}
	return g.ID, nil
}

// renew keeps lease id alive until ctx ends or the store closes,
// re-announcing the holder if the lease is lost.
func (s *Store) renew(ctx context.Context, holder string, secs int64, id clientv3.LeaseID) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()

	retry := time.Duration(secs) * time.Second / 3
	for {
		if ch, err := s.cli.KeepAlive(ctx, id); err == nil {
			for range ch { // drained until ctx ends or the lease is gone
			}
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("liveness lease lost; announcing again", "holder", holder, "lease", fmt.Sprintf("%x", id))
		for {
			t := time.NewTimer(retry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			var err error
			if id, err = s.announce(ctx, holder, secs); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("liveness lease: announcing failed", "holder", holder, "err", err)
		}
	}
}

// Alive implements meta.Store.
func (s *Store) Alive(ctx context.Context) ([]string, error) {
	if err := s.live(); err != nil {
		return nil, err
	}
	p := s.k.alive()
	resp, err := s.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.wrap("alive", err)
	}
	out := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), p))
	}
	slices.Sort(out)
	return out, nil
}
