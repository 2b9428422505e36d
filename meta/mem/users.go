package mem

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"cairn"
	"cairn/meta"
)

// cloneUser copies u's slices, so the caller's and the store's records
// never alias.
func cloneUser(u cairn.User) cairn.User {
	u.SealedSecret = slices.Clone(u.SealedSecret)
	u.Policies = slices.Clone(u.Policies)
	return u
}

// keyTakenLocked reports whether a user other than name holds access key ak.
func (s *Store) keyTakenLocked(ak, name string) bool {
	for _, u := range s.users {
		if u.AccessKey == ak && u.Name != name {
			return true
		}
	}
	return false
}

// CreateUser implements meta.Store.
func (s *Store) CreateUser(ctx context.Context, u cairn.User) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.users[u.Name]; ok {
		return fmt.Errorf("create user %s: %w", u.Name, cairn.ErrExists)
	}
	if s.keyTakenLocked(u.AccessKey, u.Name) {
		return fmt.Errorf("create user %s: %w: access key %s is taken", u.Name, cairn.ErrExists, u.AccessKey)
	}
	s.users[u.Name] = cloneUser(u)
	s.usersStamp++
	return nil
}

// User implements meta.Store.
func (s *Store) User(ctx context.Context, name string) (cairn.User, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.User{}, err
	}
	defer s.mu.Unlock()
	u, ok := s.users[name]
	if !ok {
		return cairn.User{}, fmt.Errorf("user %s: %w", name, cairn.ErrNotFound)
	}
	return cloneUser(u), nil
}

// UpdateUser implements meta.Store.
func (s *Store) UpdateUser(ctx context.Context, u, prev cairn.User) error {
	if err := meta.CheckUserUpdate(u, prev); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	cur, ok := s.users[u.Name]
	switch {
	case !ok:
		return fmt.Errorf("update user %s: %w", u.Name, cairn.ErrNotFound)
	case !meta.SameUser(cur, prev):
		return fmt.Errorf("update user %s: %w", u.Name, cairn.ErrConflict)
	case s.keyTakenLocked(u.AccessKey, u.Name):
		return fmt.Errorf("update user %s: %w: access key %s is taken", u.Name, cairn.ErrExists, u.AccessKey)
	}
	s.users[u.Name] = cloneUser(u)
	s.usersStamp++
	return nil
}

// DeleteUser implements meta.Store.
func (s *Store) DeleteUser(ctx context.Context, name string) error {
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.users[name]; !ok {
		return fmt.Errorf("delete user %s: %w", name, cairn.ErrNotFound)
	}
	delete(s.users, name)
	s.usersStamp++
	return nil
}

// UsersStamp implements meta.Store: the count of user changes.
func (s *Store) UsersStamp(ctx context.Context) (int64, error) {
	if err := s.lockLive(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.usersStamp, nil
}

// Users implements meta.Store.
func (s *Store) Users(ctx context.Context, after string, limit int) ([]cairn.User, bool, error) {
	if err := meta.CheckPageLimit("users", limit); err != nil {
		return nil, false, err
	}
	if err := s.lockLive(ctx); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	var out []cairn.User
	for _, name := range slices.Sorted(maps.Keys(s.users)) {
		if name <= after {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, cloneUser(s.users[name]))
	}
	return out, false, nil
}

// UserDefaults implements meta.Store.
func (s *Store) UserDefaults(ctx context.Context) (cairn.UserDefaults, error) {
	if err := s.lockLive(ctx); err != nil {
		return cairn.UserDefaults{}, err
	}
	defer s.mu.Unlock()
	d := s.userDefaults
	d.Policies = slices.Clone(d.Policies)
	return d, nil
}

// PutUserDefaults implements meta.Store.
func (s *Store) PutUserDefaults(ctx context.Context, d cairn.UserDefaults) error {
	if err := d.Check(); err != nil {
		return err
	}
	if err := s.lockLive(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d.Policies = slices.Clone(d.Policies)
	s.userDefaults = d
	s.usersStamp++
	return nil
}
