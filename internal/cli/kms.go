package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"cairn/client"
	"cairn/crypt"
)

// The master key file of SSE-S3 (docs/design/encryption.md, "Key file").

// kmsKeyFileHelp documents --kms-key-file.
const kmsKeyFileHelp = "master key file for SSE-S3 (x-amz-server-side-encryption: AES256; docs/design/encryption.md); " +
	"keep it secret and identical on every gateway"

// loadKeyring reads a key file.
func loadKeyring(path string) (*crypt.Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the master key file: %w", err)
	}
	k, err := crypt.ParseKeyring(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// loadOrMakeKeyring reads the key file at path, or makes one with a fresh
// key (mode 0600) if there is none; fresh reports that it was just made.
func loadOrMakeKeyring(path string) (k *crypt.Keyring, fresh bool, err error) {
	k, err = loadKeyring(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	if k, err = crypt.NewKeyring(rand.Reader); err != nil {
		return nil, false, err
	}
	if err := writeKeyring(path, k, true); err != nil {
		return nil, false, err
	}
	return k, true, nil
}

// writeKeyring writes k to path (mode 0600) through a temporary file and
// a rename, so a crash leaves the old file or the new one; with create
// set, an existing file is an error.
func writeKeyring(path string, k *crypt.Keyring, create bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(k.Marshal()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if create {
		if _, err := os.Stat(path); err == nil {
			os.Remove(tmp)
			return fmt.Errorf("%s exists", path)
		}
	}
	return os.Rename(tmp, path)
}

// kmsFile is the --kms-key-file flag of the CLI's direct mode (put, get).
type kmsFile struct{ file *string }

func kmsFlag(fs *flag.FlagSet) kmsFile {
	return kmsFile{fs.String("kms-key-file", "", "master key file for encrypted objects (cairn server keeps one in DIR/kms.json)")}
}

// options returns the cluster options with the key file's keyring, if
// one is given.
func (k kmsFile) options(stderr io.Writer) func() (clusterOptions, error) {
	return func() (clusterOptions, error) {
		o := clusterOptions{log: logger(stderr, false)}
		if *k.file != "" {
			ring, err := loadKeyring(*k.file)
			if err != nil {
				return o, fmt.Errorf("%w: --kms-key-file: %w", ErrUsage, err)
			}
			o.keys = ring
		}
		return o, nil
	}
}

// liveKeys is the key service of a server or gateway: the key file's
// keyring, read again on SIGHUP (after 'cairn admin keys rotate'), so new
// objects are sealed with the new current key without a restart.
type liveKeys struct {
	path string
	ring atomic.Pointer[crypt.Keyring]
}

var _ client.KeyService = (*liveKeys)(nil)

func newLiveKeys(path string, k *crypt.Keyring) *liveKeys {
	l := &liveKeys{path: path}
	l.ring.Store(k)
	return l
}

// Seal implements client.KeyService.
func (l *liveKeys) Seal(ctx context.Context, dataKey []byte, rand io.Reader) (string, []byte, error) {
	return l.ring.Load().Seal(ctx, dataKey, rand)
}

// Unseal implements client.KeyService.
func (l *liveKeys) Unseal(ctx context.Context, keyID string, sealed []byte) ([]byte, error) {
	return l.ring.Load().Unseal(ctx, keyID, sealed)
}

// watch reloads the key file on SIGHUP until ctx ends; a file that does
// not parse leaves the keys as they were.
func (l *liveKeys) watch(ctx context.Context, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				k, err := loadKeyring(l.path)
				if err != nil {
					log.Error("SIGHUP: keeping the previous master keys", "err", err)
					continue
				}
				l.ring.Store(k)
				log.Warn("SIGHUP: master keys reloaded", "file", l.path, "current", k.Current(), "keys", len(k.IDs()))
			}
		}
	}()
}
