package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"cairn/s3"
)

// usersFile is the JSON of --users FILE.
type usersFile struct {
	Users []struct {
		Name      string `json:"name"`
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
		// Policies is the user's allow-list of x-cairn-policy values
		// (s3.Identity.Policies); empty: the gateway's.
		Policies []string `json:"policies,omitempty"`
	} `json:"users"`
}

// loadUsers builds the S3 identities: root (unless its access key is
// "") plus the users in path (if not ""). Names and access keys must be
// unique; secrets at least 8 characters.
func loadUsers(path string, root s3Creds) (s3.StaticCredentials, error) {
	creds := s3.StaticCredentials{}
	if root.AccessKey != "" {
		creds = s3.RootCredentials(root.AccessKey, root.SecretKey)
	}
	if path == "" {
		return creds, nil
	}
	f, err := readUsersFile(path)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{"root": true}
	for i, u := range f.Users {
		switch {
		case u.Name == "" || u.AccessKey == "":
			return nil, fmt.Errorf("users file %s: user %d needs a name and an access_key", path, i+1)
		case names[u.Name]:
			return nil, fmt.Errorf("users file %s: user name %q is used twice (or is \"root\")", path, u.Name)
		case len(u.SecretKey) < 8:
			return nil, fmt.Errorf("users file %s: user %q: secret_key must be at least 8 characters", path, u.Name)
		}
		if _, dup := creds[u.AccessKey]; dup {
			return nil, fmt.Errorf("users file %s: user %q: access key %q is used twice", path, u.Name, u.AccessKey)
		}
		names[u.Name] = true
		pol, err := parsePolicies(strings.Join(u.Policies, ","))
		if err != nil {
			return nil, fmt.Errorf("users file %s: user %q: %w", path, u.Name, err)
		}
		creds[u.AccessKey] = s3.Identity{Name: u.Name, AccessKey: u.AccessKey, SecretKey: u.SecretKey, Policies: pol}
	}
	return creds, nil
}

// readUsersFile reads and parses a users file.
func readUsersFile(path string) (usersFile, error) {
	var f usersFile
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("users file: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("users file %s: %w", path, err)
	}
	return f, nil
}

// liveCreds is a Credentials whose identities can be swapped while
// requests run (users file reloaded on SIGHUP).
type liveCreds struct {
	cur atomic.Pointer[s3.StaticCredentials]
}

var _ s3.Credentials = (*liveCreds)(nil)

// Lookup implements s3.Credentials.
func (l *liveCreds) Lookup(accessKey string) (s3.Identity, bool) {
	return (*l.cur.Load()).Lookup(accessKey)
}

func (l *liveCreds) set(c s3.StaticCredentials) { l.cur.Store(&c) }

// watchUsers reloads path into l on every SIGHUP until stop is closed; a
// file that fails to load is logged and the old identities stay.
func watchUsers(l *liveCreds, path string, root s3Creds, log *slog.Logger, stop <-chan struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-stop:
				return
			case <-hup:
				c, err := loadUsers(path, root)
				if err != nil {
					log.Error("SIGHUP: keeping the previous S3 users", "err", err)
					continue
				}
				l.set(c)
				log.Warn("SIGHUP: S3 users reloaded", "identities", len(c))
			}
		}
	}()
}
