package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"cairn"
	"cairn/crypt"
	"cairn/meta"
	"cairn/s3"
)

// The gateway's S3 users from the metadata store (docs/design/s3.md,
// "Users and keys"): every --users-refresh the gateway reads the users'
// stamp, and all the users when it changed, so every gateway serves the
// users `cairn admin user` (or another gateway) wrote, without a restart.

// defaultUsersRefresh is how often a gateway checks the store's users.
const defaultUsersRefresh = time.Second

// userLister is the part of meta.Store that pages the users.
type userLister interface {
	Users(ctx context.Context, after string, limit int) ([]cairn.User, bool, error)
	UsersStamp(ctx context.Context) (int64, error)
	UserDefaults(ctx context.Context) (cairn.UserDefaults, error)
}

// storeIdentities reads every user of st, a page at a time, and opens
// their secret keys with seal (crypt.UserSealKey). A user whose secret
// does not open (sealed under another cluster secret, or damaged) is left
// out and reported in skipped; err is a failed read. A user without an
// allow-list of its own gets the cluster's (cairn.UserDefaults), if any.
func storeIdentities(ctx context.Context, st userLister, seal []byte) (ids s3.StaticCredentials, skipped []error, err error) {
	defaults, err := st.UserDefaults(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the S3 users' defaults: %w", err)
	}
	ids = s3.StaticCredentials{}
	after := ""
	for {
		us, more, err := st.Users(ctx, after, meta.MaxPage)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the S3 users: %w", err)
		}
		for _, u := range us {
			after = u.Name
			secret, err := crypt.OpenSecret(seal, u.SealedSecret, u.Name, u.AccessKey)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("user %s: %w (sealed under another cluster secret?)", u.Name, err))
				continue
			}
			pol := u.Policies
			if len(pol) == 0 {
				pol = defaults.Policies
			}
			ids[u.AccessKey] = s3.Identity{Name: u.Name, AccessKey: u.AccessKey, SecretKey: secret, Root: u.Root, Policies: pol}
		}
		if !more || len(us) == 0 {
			return ids, skipped, nil
		}
	}
}

// userTable is a gateway's s3.Credentials: the identities of the flags
// and the users file (static, which win) over the store's users (stored,
// swapped whole by each refresh).
type userTable struct {
	static *liveCreds
	stored atomic.Pointer[s3.StaticCredentials]
}

var _ s3.Credentials = (*userTable)(nil)

// Lookup implements s3.Credentials.
func (t *userTable) Lookup(accessKey string) (s3.Identity, bool) {
	if id, ok := t.static.Lookup(accessKey); ok {
		return id, true
	}
	if m := t.stored.Load(); m != nil {
		return (*m).Lookup(accessKey)
	}
	return s3.Identity{}, false
}

// storeUsers keeps a userTable's stored identities fresh.
//
// Locking: mu serializes loads (a load that read older users must not
// swap them in after a newer one); it is held over the store reads,
// which are bounded by load's deadline.
type storeUsers struct {
	table   *userTable
	st      userLister
	seal    []byte
	every   time.Duration
	log     *slog.Logger
	lastBad atomic.Int64 // users skipped by the last read (logged when it changes)

	mu    sync.Mutex
	read  bool  // the users were read at stamp; guarded by mu
	stamp int64 // guarded by mu

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// load reads the users' stamp and, if it changed since the last read
// (or there was none), every user, under a deadline of the refresh
// interval (at least 5 s), and swaps them in; on error the table keeps
// what it had.
func (s *storeUsers) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(s.every, 5*time.Second))
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	stamp, err := s.st.UsersStamp(ctx)
	if err != nil {
		return fmt.Errorf("reading the S3 users' stamp: %w", err)
	}
	if s.read && stamp == s.stamp {
		return nil
	}
	// The stamp is read first: a change made during the read below
	// changes it again, and the next load reads again.
	ids, skipped, err := storeIdentities(ctx, s.st, s.seal)
	if err != nil {
		return err
	}
	if n := int64(len(skipped)); s.lastBad.Swap(n) != n && n > 0 {
		s.log.Error("S3 users whose secret key does not open are not served", "users", n, "err", errors.Join(skipped...))
	}
	s.table.stored.Store(&ids)
	s.read, s.stamp = true, stamp
	return nil
}

// start reads the users once (an error ends it: a gateway that cannot
// read its users should not start) and then every s.every until stop.
func (s *storeUsers) start(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Go(func() {
		t := time.NewTicker(s.every)
		defer t.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := s.load(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				s.log.Warn("S3 users: keeping the last ones read", "err", err)
				failing = true
			case err == nil && failing:
				s.log.Info("S3 users: read again")
				failing = false
			}
		}
	})
	return nil
}

// stop ends the refresh loop and waits for it.
func (s *storeUsers) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}
