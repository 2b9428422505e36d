package etcdmeta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"cairn"
)

// Backup is what Store.Backup wrote (docs/design/meta.md, "Backup and
// restore").
type Backup struct {
	Bytes   int64  // the snapshot's size, etcd's trailing checksum included
	SHA256  string // hex SHA-256 of the whole file, to check a copy against
	Version string // the etcd version of the member that made it
}

// Backup streams a consistent snapshot of the whole etcd keyspace (every
// cluster's keys, not only this store's prefix) from one member into w,
// and reports its size, revision and checksum. The snapshot ends with
// etcd's own SHA-256 of the database, which Restore checks; an
// incomplete stream is an error.
func (s *Store) Backup(ctx context.Context, w io.Writer) (Backup, error) {
	resp, err := s.cli.SnapshotWithVersion(ctx)
	if err != nil {
		return Backup{}, fmt.Errorf("etcd snapshot: %w", err)
	}
	defer resp.Snapshot.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Snapshot)
	if err != nil {
		return Backup{}, fmt.Errorf("etcd snapshot: after %d bytes: %w", n, err)
	}
	// A stream from etcd ends with the database's SHA-256: the database
	// is whole pages of 512 bytes' multiples, so the length says whether
	// the checksum arrived.
	if n%512 != sha256.Size {
		return Backup{}, fmt.Errorf("etcd snapshot: %d bytes is not a database and its checksum (the stream was cut short?)", n)
	}
	return Backup{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Version: resp.Version}, nil
}

// BackupStatus is what CheckBackup found in a snapshot file.
type BackupStatus struct {
	Revision int64 // the etcd revision it holds: every write up to it, none after
	Keys     int   // the keys live at that revision
}

// CheckBackup opens a snapshot file as a database, checks its structure
// (every page reachable once) and reads its revision: a file that passes
// is one Restore can use, unless its bytes change later (Restore checks
// the trailing checksum too).
func CheckBackup(path string) (BackupStatus, error) {
	st, err := snapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return BackupStatus{}, fmt.Errorf("checking the backup %s: %w: %v", path, cairn.ErrCorrupt, err)
	}
	return BackupStatus{Revision: st.Revision, Keys: st.TotalKey}, nil
}

// RestoreConfig says which member a snapshot is restored for. Restore
// fills the defaults.
type RestoreConfig struct {
	// Snapshot is the file Store.Backup wrote. Required.
	Snapshot string
	// Dir is the member's data directory (EmbedConfig.Dir; for `cairn
	// server`, the meta directory under its --data). Required.
	Dir string
	// Name and PeerURL are the member's (EmbedConfig.Name and PeerURL):
	// "cairn" and required as there. InitialCluster lists every member
	// of the restored cluster as name=peerURL, as in EmbedConfig; just
	// this one if empty. ClusterToken is EmbedConfig's, "cairn" if empty.
	Name, PeerURL, InitialCluster, ClusterToken string
	// Force moves a Dir that exists and is not empty aside (to
	// Dir.before-restore-TIME) instead of refusing.
	Force bool
	// Now stamps the name of a directory moved aside; time.Now if nil.
	Now func() time.Time
}

// RevisionBump is how far Restore moves etcd's revision past the
// snapshot's, as etcd recommends: a client that watched the old cluster
// at a later revision than the snapshot's must not miss the restored
// cluster's writes, and the bump marks every older revision compacted so
// such a watch fails loudly instead.
const RevisionBump = 1_000_000_000

// Restore builds a member's data directory from a snapshot (etcd's
// snapshot restore: the database, checked against its checksum, a new
// cluster identity, one WAL and raft snapshot), into a fresh directory
// beside Dir that is renamed into place when whole. It refuses a Dir that
// exists and is not empty unless Force, and returns where the old one
// went ("" if nowhere). The member must not be running.
func Restore(c RestoreConfig) (movedAside string, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("restore: %w: %s", cairn.ErrInvalid, fmt.Sprintf(format, args...))
	}
	if c.Snapshot == "" {
		return "", bad("no snapshot file")
	}
	if c.Dir == "" {
		return "", bad("no data directory")
	}
	if c.Name == "" {
		c.Name = "cairn"
	}
	if c.PeerURL == "" {
		return "", bad("no peer URL")
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + c.PeerURL
	}
	if !strings.Contains(","+c.InitialCluster, ","+c.Name+"=") {
		return "", bad("initial cluster %q does not name this member, %q", c.InitialCluster, c.Name)
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "cairn"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	st, err := os.Stat(c.Snapshot)
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", bad("snapshot %s is not a regular file", c.Snapshot)
	}
	if n := st.Size(); n%512 != sha256.Size {
		return "", fmt.Errorf("restore: %w: %s is not a backup: %d bytes is not an etcd database and its checksum (a truncated copy?)", cairn.ErrCorrupt, c.Snapshot, n)
	}
	dir := filepath.Clean(c.Dir)
	empty, err := emptyOrAbsent(dir)
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if !empty && !c.Force {
		return "", fmt.Errorf("restore: %w: %s exists and is not empty (a member's data: stop it and pass --force to move it aside)", cairn.ErrExists, dir)
	}
	tmp := dir + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        c.Snapshot,
		Name:                c.Name,
		OutputDataDir:       tmp,
		PeerURLs:            []string{c.PeerURL},
		InitialCluster:      c.InitialCluster,
		InitialClusterToken: c.ClusterToken,
		RevisionBump:        RevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		if strings.Contains(err.Error(), "expected sha256") {
			// etcd's message lists both sums byte by byte.
			return "", fmt.Errorf("restore: %w: %s does not match its checksum: the file was changed or damaged", cairn.ErrCorrupt, c.Snapshot)
		}
		return "", fmt.Errorf("restore %s: %w", c.Snapshot, err)
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if !empty {
		movedAside = dir + ".before-restore-" + c.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(dir, movedAside); err != nil {
			return "", fmt.Errorf("restore: moving the old data aside: %w", err)
		}
	} else if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return movedAside, fmt.Errorf("restore: %w", err)
	}
	return movedAside, syncDir(filepath.Dir(dir))
}

// emptyOrAbsent reports whether dir does not exist or is an empty
// directory.
func emptyOrAbsent(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	return len(names) == 0, nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
