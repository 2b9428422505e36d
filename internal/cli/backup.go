package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cairn/internal/cmdline"
	etcdmeta "cairn/meta/etcd"
)

const backupHelp = `Writes a consistent snapshot of the metadata store (etcd's: every bucket,
manifest, upload, disk and queue record as of one revision) to FILE. It is
written to FILE.tmp, synced, checked (opened as a database, its structure
verified) and renamed, so FILE is whole or absent; an existing FILE is
refused unless --force. Prints the size, the revision, the number of keys
and the SHA-256 of the file.

The snapshot holds metadata only: object data stays on the disks. Restore
it with 'cairn admin restore' (docs/design/meta.md, "Backup and restore"):
objects written after the backup are then unknown (their shards stay on
the disks, unreferenced), and objects deleted after it come back only if
their shards are still on the disks. The SSE-S3 key file (kms.json) and
the cluster secret are not in it: keep them safe too. Back up often, and
keep the file off the cluster's machines.`

func runAdminBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin backup", flag.ContinueOnError)
	force := fs.Bool("force", false, "replace FILE if it exists")
	cmdline.Usage(fs, "cairn admin backup [--force] FILE", backupHelp)
	check := func() (clusterOptions, error) {
		if err := backupTarget(fs.Arg(0), *force); err != nil {
			return clusterOptions{}, err
		}
		return clusterOptions{log: logger(stderr, false)}, nil
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 1, 1, check, func(ctx context.Context, cl *cluster, args []string) error {
		store, ok := cl.meta.(*etcdmeta.Store)
		if !ok {
			return fmt.Errorf("backup: the metadata store is %T, not etcd", cl.meta)
		}
		path := args[0]
		b, st, err := writeBackup(ctx, store, path, *force)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d bytes, etcd revision %d, %d keys, sha256 %s", path, b.Bytes, st.Revision, st.Keys, b.SHA256)
		if b.Version != "" {
			fmt.Fprintf(stdout, ", etcd %s", b.Version)
		}
		fmt.Fprintln(stdout)
		return nil
	})
}

// backupTarget checks that a backup may be written to path.
func backupTarget(path string, force bool) error {
	if path == "" {
		return fmt.Errorf("%w: the backup FILE is empty", ErrUsage)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%w: %s is a directory; give a file name", ErrUsage, path)
	case !force:
		return fmt.Errorf("%w: %s exists; pass --force to replace it", ErrUsage, path)
	}
	if d, err := os.Stat(filepath.Dir(path)); err != nil || !d.IsDir() {
		return fmt.Errorf("%w: the directory of %s does not exist", ErrUsage, path)
	}
	return nil
}

// writeBackup streams the snapshot to path.tmp, syncs it, checks it and
// renames it to path.
func writeBackup(ctx context.Context, store *etcdmeta.Store, path string, force bool) (etcdmeta.Backup, etcdmeta.BackupStatus, error) {
	tmp := path + ".tmp"
	b, st, err := func() (etcdmeta.Backup, etcdmeta.BackupStatus, error) {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
		}
		b, err := store.Backup(ctx, f)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
		}
		st, err := etcdmeta.CheckBackup(tmp)
		if err != nil {
			return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
		}
		// FILE may have appeared while the snapshot streamed.
		if err := backupTarget(path, force); err != nil {
			return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
		}
		return b, st, os.Rename(tmp, path)
	}()
	if err != nil {
		os.Remove(tmp)
		return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return etcdmeta.Backup{}, etcdmeta.BackupStatus{}, err
	}
	defer d.Close()
	return b, st, d.Sync()
}

const restoreHelp = `Rebuilds a metadata member's data directory from a snapshot 'cairn admin
backup' wrote. Offline: stop the member first ('cairn server' or 'cairn
meta'), restore, start it again with its usual flags.

For 'cairn server --data DIR':  cairn admin restore --server-data DIR FILE
  (rebuilds DIR/meta; the disks, the secret and client.conf are kept; give
  --peer-addr if the server runs with a --meta-peer-addr or --port-base
  other than the default).
For each member of a 'cairn meta' cluster, with the same FILE:
  cairn admin restore --meta-data DIR --name N --peer-addr ADDR \
      --initial-cluster m1=http://h1:9380,m2=http://h2:9380,m3=http://h3:9380 FILE
  then start every member as before.

An existing, non-empty metadata directory is refused unless --force, which
moves it aside to DIR.before-restore-TIME (delete it once the cluster
works). The restored store starts at the backup's revision plus 10^9, with
the older revisions marked compacted (etcd's advice); the snapshot's
checksum is checked. See docs/design/meta.md, "Backup and restore".`

func runAdminRestore(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin restore", flag.ContinueOnError)
	serverData := fs.String("server-data", "", "the --data directory of the 'cairn server' to restore (its meta directory is rebuilt)")
	metaData := fs.String("meta-data", "", "the --data directory of the 'cairn meta' member to restore")
	name := fs.String("name", "meta1", "the member's name (--name of 'cairn meta'; 'cairn server' uses meta1)")
	peerAddr := fs.String("peer-addr", "127.0.0.1:9380", "the member's peer address (--peer-addr of 'cairn meta', --meta-peer-addr of 'cairn server')")
	initial := fs.String("initial-cluster", "", "every member as name=http://peer-addr, comma-separated, as given to 'cairn meta' (default: just this one)")
	force := fs.Bool("force", false, "move an existing, non-empty metadata directory aside instead of refusing")
	cmdline.Usage(fs, "cairn admin restore (--server-data DIR | --meta-data DIR) [flags] FILE", restoreHelp)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, true); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: cairn admin restore takes 1 argument (the backup FILE), got %d", ErrUsage, fs.NArg())
	}
	var dir string
	switch {
	case *serverData != "" && *metaData != "":
		return fmt.Errorf("%w: give --server-data or --meta-data, not both", ErrUsage)
	case *serverData != "":
		if _, err := os.Stat(*serverData); err != nil {
			return fmt.Errorf("%w: --server-data: %v", ErrUsage, err)
		}
		dir = filepath.Join(*serverData, "meta")
	case *metaData != "":
		dir = *metaData
	default:
		return fmt.Errorf("%w: cairn admin restore needs --server-data DIR (a 'cairn server') or --meta-data DIR (a 'cairn meta' member)", ErrUsage)
	}
	file := fs.Arg(0)
	if st, err := os.Stat(file); err != nil {
		return fmt.Errorf("%w: the backup FILE: %v", ErrUsage, err)
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: the backup FILE %s is not a regular file", ErrUsage, file)
	}
	if *force {
		if err := looksLikeMember(dir); err != nil {
			return err
		}
	}
	aside, err := etcdmeta.Restore(etcdmeta.RestoreConfig{
		Snapshot: file, Dir: dir, Name: *name, PeerURL: peerURL(*peerAddr), InitialCluster: *initial, Force: *force,
	})
	if err != nil {
		return err
	}
	if aside != "" {
		fmt.Fprintf(stdout, "moved the old metadata directory to %s\n", aside)
	}
	fmt.Fprintf(stdout, "restored %s into %s (member %s); start the member again\n", file, dir, *name)
	return nil
}

// looksLikeMember refuses to move aside a directory that is not an etcd
// member's data (only "member" in it): a mistyped --meta-data naming a
// server's whole data directory must not move its disks.
func looksLikeMember(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != "member" {
			return fmt.Errorf("%w: %s holds %q, so it is not a metadata member's directory; not moving it aside", ErrUsage, dir, e.Name())
		}
	}
	return nil
}
