package mem

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"cairn"
	"cairn/meta"
)

// role is the election state of one role. Guarded by Store.mu.
type role struct {
	leader  *leadership
	waiters []*waiter // in campaign order
}

// waiter is a blocked Campaign. won receives the leadership (buffered, sent
// under Store.mu); closed is closed by Store.Close.
type waiter struct {
	id     string
	won    chan *leadership
	closed chan struct{}
}

// leadership implements meta.Leadership.
type leadership struct {
	s        *Store
	role, id string
	done     chan struct{}
	once     sync.Once
}

func (l *leadership) end() { l.once.Do(func() { close(l.done) }) }

// Done implements meta.Leadership.
func (l *leadership) Done() <-chan struct{} { return l.done }

// Resign implements meta.Leadership: the longest-waiting campaigner, if
// any, becomes leader. Resigning twice, or after Close, is a no-op.
func (l *leadership) Resign(ctx context.Context) error {
	s := l.s
	s.mu.Lock()
	if r := s.roles[l.role]; r != nil && r.leader == l {
		s.handOverLocked(l.role, r)
	}
	s.mu.Unlock()
	l.end()
	return nil
}

// handOverLocked makes the first waiter of r the leader, or leaves r
// leaderless.
func (s *Store) handOverLocked(name string, r *role) {
	r.leader = nil
	if len(r.waiters) == 0 {
		return
	}
	w := r.waiters[0]
	r.waiters = r.waiters[1:]
	r.leader = &leadership{s: s, role: name, id: w.id, done: make(chan struct{})}
	w.won <- r.leader
}

// Campaign implements meta.Store.
func (s *Store) Campaign(ctx context.Context, name, id string) (meta.Leadership, error) {
	if err := meta.CheckCampaign(name, id); err != nil {
		return nil, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, err
	}
	r := s.roles[name]
	if r == nil {
		r = &role{}
		s.roles[name] = r
	}
	if r.leader == nil {
		r.leader = &leadership{s: s, role: name, id: id, done: make(chan struct{})}
		s.mu.Unlock()
		return r.leader, nil
	}
	w := &waiter{id: id, won: make(chan *leadership, 1), closed: make(chan struct{})}
	r.waiters = append(r.waiters, w)
	s.mu.Unlock()

	select {
	case l := <-w.won:
		return l, nil
	case <-w.closed:
		return nil, fmt.Errorf("campaign for %s: %w", name, meta.ErrClosed)
	case <-ctx.Done():
		s.mu.Lock()
		r.waiters = slices.DeleteFunc(r.waiters, func(x *waiter) bool { return x == w })
		s.mu.Unlock()
		select {
		case l := <-w.won: // promoted while we were giving up: pass it on
			_ = l.Resign(context.WithoutCancel(ctx))
		default:
		}
		return nil, fmt.Errorf("campaign for %s: %w", name, ctx.Err())
	}
}

// Leader implements meta.Store.
func (s *Store) Leader(ctx context.Context, name string) (string, error) {
	if err := s.lockLive(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	if r := s.roles[name]; r != nil && r.leader != nil {
		return r.leader.id, nil
	}
	return "", fmt.Errorf("leader of %s: %w", name, cairn.ErrNotFound)
}

// Waiting returns how many campaigners are blocked on role (for tests and
// the simulator, to know a Campaign has queued).
func (s *Store) Waiting(role string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.roles[role]; r != nil {
		return len(r.waiters)
	}
	return 0
}
