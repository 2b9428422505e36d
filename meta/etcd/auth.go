package etcdmeta

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
)

// The etcd users of a cluster with authentication (docs/design/meta.md,
// "Transport security and authentication").
const (
	// RootUser is etcd's root: etcd turns authentication on only once it
	// exists. It has no password, so no request authenticates as it by
	// password; and since a client certificate's CommonName is taken as
	// the user of a request that carries no token, no certificate cairn
	// makes has the CommonName root (or cairn).
	RootUser = "root"
	// User is the user every cairn process authenticates as, with a
	// password derived from the cluster secret. It has etcd's root role:
	// cairn's own admin commands need it (member status, snapshots,
	// member changes).
	User = "cairn"
)

// ErrAuthMismatch is returned by EnableAuth when authentication is on
// and User's password is not the one given: the cluster was set up with
// another secret.
var ErrAuthMismatch = errors.New("etcd authentication is on, but the cairn user's password is not this one")

// EnableAuth turns etcd authentication on for the cluster at endpoints,
// if it is not on yet: it adds RootUser (without a password) and User
// (with password), grants both etcd's root role and enables
// authentication. It then checks that User authenticates with password.
// tc is the client TLS configuration (nil: plain); each call has timeout
// (5 s if zero). Every member of a
// new cluster may call it at once: the steps are idempotent, and a call
// that finds authentication turned on meanwhile only checks the
// password. Until it returns, the cluster serves any client that
// passes TLS (with client certificates, one of the cluster's CA).
func EnableAuth(ctx context.Context, endpoints []string, tc *tls.Config, password string, timeout time.Duration) error {
	if password == "" {
		return fmt.Errorf("etcd authentication: %w: empty password", cairn.ErrInvalid)
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: timeout, TLS: tc, Logger: zapLogger(nil, nil)})
	if err != nil {
		return fmt.Errorf("etcd authentication: %w", err)
	}
	defer cli.Close()
	// Once authentication is on, AuthStatus needs the root role: an
	// error is a cluster with authentication, checked below.
	if st, err := authStatus(ctx, cli, timeout); err == nil && !st.Enabled {
		if err := bootstrapAuth(ctx, cli, password, timeout); err != nil {
			if st, serr := authStatus(ctx, cli, timeout); serr == nil && !st.Enabled {
				return fmt.Errorf("etcd authentication: %w", err)
			}
			// Another member turned it on meanwhile.
		}
	} else if err != nil && !IsAuthError(err) {
		return fmt.Errorf("etcd authentication: %w", err)
	}
	return checkAuth(ctx, endpoints, tc, password, timeout)
}

// authStatus is cli.AuthStatus within timeout.
func authStatus(ctx context.Context, cli *clientv3.Client, timeout time.Duration) (*clientv3.AuthStatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cli.AuthStatus(ctx)
}

// bootstrapAuth adds the users and turns authentication on; a user that
// exists already is kept. Each step has timeout.
func bootstrapAuth(ctx context.Context, cli *clientv3.Client, password string, timeout time.Duration) error {
	step := func(what string, f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := f(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	exists := func(err error) error {
		if errors.Is(err, rpctypes.ErrUserAlreadyExist) {
			return nil
		}
		return err
	}
	steps := []struct {
		what string
		f    func(ctx context.Context) error
	}{
		{"adding user " + RootUser, func(ctx context.Context) error {
			_, err := cli.UserAddWithOptions(ctx, RootUser, "", &clientv3.UserAddOptions{NoPassword: true})
			return exists(err)
		}},
		{"adding user " + User, func(ctx context.Context) error {
			_, err := cli.UserAdd(ctx, User, password)
			return exists(err)
		}},
		{"granting user " + RootUser + " the root role", func(ctx context.Context) error {
			_, err := cli.UserGrantRole(ctx, RootUser, "root")
			return err
		}},
		{"granting user " + User + " the root role", func(ctx context.Context) error {
			_, err := cli.UserGrantRole(ctx, User, "root")
			return err
		}},
		{"enabling authentication", func(ctx context.Context) error {
			_, err := cli.AuthEnable(ctx)
			return err
		}},
	}
	for _, s := range steps {
		if err := step(s.what, s.f); err != nil {
			return err
		}
	}
	return nil
}

// checkAuth checks that User authenticates with password and that
// authentication is on.
func checkAuth(ctx context.Context, endpoints []string, tc *tls.Config, password string, timeout time.Duration) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: timeout, TLS: tc,
		Username: User, Password: password, Logger: zapLogger(nil, nil)})
	if errors.Is(err, rpctypes.ErrAuthFailed) {
		return fmt.Errorf("etcd authentication: %w", ErrAuthMismatch)
	}
	if err != nil {
		return fmt.Errorf("etcd authentication: %w", err)
	}
	defer cli.Close()
	st, err := authStatus(ctx, cli, timeout)
	switch {
	case err != nil:
		return fmt.Errorf("etcd authentication: checking it is on: %w", err)
	case !st.Enabled:
		return fmt.Errorf("etcd authentication: still off after enabling it")
	}
	return nil
}

// IsAuthError reports whether err (from Open, EnableAuth or a store call)
// is etcd's refusal of a request's credentials: none, a wrong password,
// or a user without permission.
func IsAuthError(err error) bool {
	for _, e := range []error{rpctypes.ErrUserEmpty, rpctypes.ErrPermissionDenied, rpctypes.ErrUserNotFound,
		rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
