package etcdmeta

// S3 users (docs/design/meta.md, "Users"): the record at <p>users/<name>
// (cairn.User, JSON), and an index <p>userkeys/<access key> holding the
// name, written in the same Txn, so an access key belongs to at most one
// user; and <p>users-stamp, put (empty) by every Txn that changes a user:
// its mod revision is UsersStamp.

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

func (k keys) users() string            { return k.p + "users/" }
func (k keys) user(name string) string  { return k.users() + name }
func (k keys) userKey(ak string) string { return k.p + "userkeys/" + ak }
func (k keys) usersStamp() string       { return k.p + "users-stamp" }
func (k keys) userDefaults() string     { return k.p + "users-defaults" }

// keyAt compares key's mod revision with rev.
func keyAt(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}

// CreateUser implements meta.Store: one Txn that needs both the name's
// and the access key's keys absent.
func (s *Store) CreateUser(ctx context.Context, u cairn.User) error {
	if err := u.Check(); err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	if err := s.live(); err != nil {
		return err
	}
	op := "create user " + u.Name
	b, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	uk, kk := s.k.user(u.Name), s.k.userKey(u.AccessKey)
	resp, err := s.cli.Txn(ctx).
		If(unchanged(uk, nil), unchanged(kk, nil)).
		Then(clientv3.OpPut(uk, string(b)), clientv3.OpPut(kk, u.Name), clientv3.OpPut(s.k.usersStamp(), "")).
		Else(clientv3.OpGet(uk, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return s.wrap(op, err)
	}
	if !resp.Succeeded {
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return fmt.Errorf("%s: %w", op, cairn.ErrExists)
		}
		return fmt.Errorf("%s: %w: access key %s is taken", op, cairn.ErrExists, u.AccessKey)
	}
	return nil
}

// getUser reads a user's record and its mod revision; ErrNotFound if
// there is none (or the name is not one a user can have).
func (s *Store) getUser(ctx context.Context, op, name string) (cairn.User, int64, error) {
	var u cairn.User
	if err := s.live(); err != nil {
		return u, 0, err
	}
	if cairn.ValidateUserName(name) != nil {
		return u, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	resp, err := s.cli.Get(ctx, s.k.user(name))
	if err != nil {
		return u, 0, s.wrap(op, err)
	}
	if len(resp.Kvs) == 0 {
		return u, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &u); err != nil {
		return u, 0, fmt.Errorf("%s: decoding the stored user: %w", op, err)
	}
	return u, resp.Kvs[0].ModRevision, nil
}

// User implements meta.Store.
func (s *Store) User(ctx context.Context, name string) (cairn.User, error) {
	u, _, err := s.getUser(ctx, "user "+name, name)
	return u, err
}

// UpdateUser implements meta.Store: read the record, compare it with
// prev, then one Txn on the record's revision (and, for a new access key,
// on the new key's absence) that also moves the access-key index.
func (s *Store) UpdateUser(ctx context.Context, u, prev cairn.User) error {
	if err := meta.CheckUserUpdate(u, prev); err != nil {
		return err
	}
	op := "update user " + u.Name
	cur, rev, err := s.getUser(ctx, op, u.Name)
	if err != nil {
		return err
	}
	if !meta.SameUser(cur, prev) {
		return fmt.Errorf("%s: %w", op, cairn.ErrConflict)
	}
	b, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	uk := s.k.user(u.Name)
	cmps := []clientv3.Cmp{keyAt(uk, rev)}
	ops := []clientv3.Op{clientv3.OpPut(uk, string(b)), clientv3.OpPut(s.k.usersStamp(), "")}
	if u.AccessKey != cur.AccessKey {
		kk := s.k.userKey(u.AccessKey)
		cmps = append(cmps, unchanged(kk, nil))
		ops = append(ops, clientv3.OpDelete(s.k.userKey(cur.AccessKey)), clientv3.OpPut(kk, u.Name))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).
		Else(clientv3.OpGet(uk, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return s.wrap(op, err)
	}
	if resp.Succeeded {
		return nil
	}
	// Which compare failed: re-read the record (a changed record is a
	// conflict, even if the key is taken too).
	_, nrev, err := s.getUser(ctx, op, u.Name)
	switch {
	case err != nil:
		return err
	case nrev != rev:
		return fmt.Errorf("%s: %w", op, cairn.ErrConflict)
	}
	return fmt.Errorf("%s: %w: access key %s is taken", op, cairn.ErrExists, u.AccessKey)
}

// DeleteUser implements meta.Store: the record and its access key go in
// one Txn, on the record's revision (a concurrent rotation makes it
// read again).
func (s *Store) DeleteUser(ctx context.Context, name string) error {
	op := "delete user " + name
	for {
		cur, rev, err := s.getUser(ctx, op, name)
		if err != nil {
			return err
		}
		uk := s.k.user(name)
		resp, err := s.cli.Txn(ctx).If(keyAt(uk, rev)).
			Then(clientv3.OpDelete(uk), clientv3.OpDelete(s.k.userKey(cur.AccessKey)), clientv3.OpPut(s.k.usersStamp(), "")).Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if resp.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
}

// Users implements meta.Store: one range read of limit+1 keys.
func (s *Store) Users(ctx context.Context, after string, limit int) ([]cairn.User, bool, error) {
	if err := meta.CheckPageLimit("users", limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	from := s.k.users()
	if after != "" {
		from += after + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.k.users())),
		clientv3.WithLimit(int64(limit)+1))
	if err != nil {
		return nil, false, s.wrap("users", err)
	}
	more := len(resp.Kvs) > limit
	kvs := resp.Kvs[:min(len(resp.Kvs), limit)]
	out := make([]cairn.User, 0, len(kvs))
	for _, kv := range kvs {
		var u cairn.User
		if err := json.Unmarshal(kv.Value, &u); err != nil {
			return nil, false, fmt.Errorf("users: decoding %q: %w", kv.Key, err)
		}
		out = append(out, u)
	}
	return out, more, nil
}

// UsersStamp implements meta.Store: the mod revision of
// <p>users-stamp (0 before the first user was written).
func (s *Store) UsersStamp(ctx context.Context) (int64, error) {
	if err := s.live(); err != nil {
		return 0, err
	}
	resp, err := s.cli.Get(ctx, s.k.usersStamp(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, s.wrap("users stamp", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}

// UserDefaults implements meta.Store.
func (s *Store) UserDefaults(ctx context.Context) (cairn.UserDefaults, error) {
	return getOrZero[cairn.UserDefaults](ctx, s, "user defaults", s.k.userDefaults())
}

// PutUserDefaults implements meta.Store: one Txn that also puts the stamp.
func (s *Store) PutUserDefaults(ctx context.Context, d cairn.UserDefaults) error {
	if err := d.Check(); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("put user defaults: %w", err)
	}
	if _, err := s.cli.Txn(ctx).Then(clientv3.OpPut(s.k.userDefaults(), string(b)), clientv3.OpPut(s.k.usersStamp(), "")).Commit(); err != nil {
		return s.wrap("put user defaults", err)
	}
	return nil
}
