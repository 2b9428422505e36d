package mem

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"cairn"
)

// lease is one holder's liveness entry. While renewing, it is alive
// whatever the clock says (renewal is modelled as continuous); once stopped
// it lives ttl longer by the store's clock, the longest a real lease could.
type lease struct {
	ctx      context.Context // the KeepAlive ctx
	ttl      time.Duration
	renewing bool      // guarded by Store.mu
	expires  time.Time // guarded by Store.mu; valid when !renewing
}

func (l *lease) stopLocked(now time.Time) {
	if l.renewing {
		l.renewing = false
		l.expires = now.Add(l.ttl)
	}
}

// KeepAlive implements meta.Store. A later KeepAlive of the same holder
// replaces the entry; the earlier one's ctx no longer affects it.
func (s *Store) KeepAlive(ctx context.Context, holder string, ttl time.Duration) error {
	if holder == "" || ttl <= 0 {
		return fmt.Errorf("keep alive %q for %v: %w: need a holder and a positive ttl", holder, ttl, cairn.ErrInvalid)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	l := &lease{ctx: ctx, ttl: ttl, renewing: true}
	s.leases[holder] = l
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if l.renewing { // else Alive or Close saw the end first; don't read the clock
			l.stopLocked(s.now())
		}
	})
	s.stops = append(s.stops, stop)
	return nil
}

// Alive implements meta.Store.
func (s *Store) Alive(ctx context.Context) ([]string, error) {
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.now()
	for holder, l := range s.leases {
		if l.renewing && l.ctx.Err() != nil {
			// Its ctx ended but the AfterFunc has not run yet: stop now, so
			// that cancel, Alive, then moving a fake clock is deterministic.
			l.stopLocked(now)
		}
		if !l.renewing && !now.Before(l.expires) {
			delete(s.leases, holder)
		}
	}
	return slices.Sorted(maps.Keys(s.leases)), nil
}
