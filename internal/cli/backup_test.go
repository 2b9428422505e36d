package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn"
)

// Every argument error of admin backup and restore is refused with a
// precise message before anything is connected to or written.
func TestBackupRestoreArgs(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists")
	if err := os.WriteFile(exists, make([]byte, 512+32), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("not a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	member := filepath.Join(dir, "member-dir")
	if err := os.MkdirAll(filepath.Join(member, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	server := filepath.Join(dir, "server")
	if err := os.MkdirAll(filepath.Join(server, "disk1"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func([]string) error
		args []string
		want string // in the error
		is   error
	}{
		{"backup without FILE", adminBackup, nil, "takes 1 argument(s), got 0", ErrUsage},
		{"backup with two FILEs", adminBackup, []string{"a", "b"}, "takes 1 argument(s), got 2", ErrUsage},
		{"backup over a file", adminBackup, []string{exists}, exists + " exists; pass --force", ErrUsage},
		{"backup to a directory", adminBackup, []string{"--force", dir}, "is a directory", ErrUsage},
		{"backup into no directory", adminBackup, []string{filepath.Join(dir, "none", "f")}, "does not exist", ErrUsage},
		{"restore without FILE", adminRestore, []string{"--meta-data", member}, "takes 1 argument (the backup FILE), got 0", ErrUsage},
		{"restore without a directory", adminRestore, []string{exists}, "needs --server-data DIR", ErrUsage},
		{"restore to both", adminRestore, []string{"--server-data", server, "--meta-data", member, exists}, "not both", ErrUsage},
		{"restore a missing FILE", adminRestore, []string{"--meta-data", member, filepath.Join(dir, "none")}, "the backup FILE", ErrUsage},
		{"restore a directory", adminRestore, []string{"--meta-data", member, dir}, "is not a regular file", ErrUsage},
		{"restore into a missing server", adminRestore, []string{"--server-data", filepath.Join(dir, "none"), exists}, "--server-data", ErrUsage},
		{"restore over a member", adminRestore, []string{"--meta-data", member, exists}, "is not empty", cairn.ErrExists},
		{"force over a server's data", adminRestore, []string{"--meta-data", server, "--force", exists}, `holds "disk1"`, ErrUsage},
		{"initial cluster without the member", adminRestore, []string{"--meta-data", filepath.Join(dir, "new"), "--name", "m2",
			"--initial-cluster", "m1=http://127.0.0.1:1", exists}, `does not name this member, "m2"`, cairn.ErrInvalid},
		{"restore garbage", adminRestore, []string{"--meta-data", filepath.Join(dir, "new"), short}, short + " is not a backup: 14 bytes", cairn.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
		})
	}
	// Nothing was written by the refusals.
	for _, p := range []string{filepath.Join(dir, "new"), filepath.Join(dir, "new.restoring"), exists + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it absent", p, err)
		}
	}
	if entries, err := os.ReadDir(member); err != nil || len(entries) != 1 {
		t.Errorf("the member directory changed: %v %v", entries, err)
	}
}

func adminBackup(args []string) error {
	return runAdminBackup(context.Background(), args, io.Discard, io.Discard)
}

func adminRestore(args []string) error {
	return runAdminRestore(context.Background(), args, io.Discard, io.Discard)
}
