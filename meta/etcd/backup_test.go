package etcdmeta_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	etcdmeta "cairn/meta/etcd"
)

// A backup of a single member restores into a three-member cluster (the
// `cairn meta` procedure of docs/design/meta.md): every member rebuilt
// from the same file with the same initial cluster, and every manifest
// committed before the backup is there; one committed after is not.
func TestBackupRestoreThreeMembers(t *testing.T) {
	ctx := t.Context()
	t.Chdir(t.TempDir())
	srv := startSingle(t, t.TempDir())
	s := open(t, srv.Endpoints(), "")
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rep-1"}); err != nil {
		t.Fatal(err)
	}
	mk := func(i int) *cairn.Manifest {
		return &cairn.Manifest{Bucket: "bkt", Key: fmt.Sprintf("k%02d", i), Version: fmt.Sprintf("v%d", i), Size: int64(i), Policy: "rep-1", Layout: oneCopy}
	}
	for i := range 20 {
		if err := s.CommitManifest(ctx, mk(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	b, err := s.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if b.Bytes != int64(buf.Len()) || b.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("backup reports %+v for %d bytes with sha256 %x", b, buf.Len(), sum)
	}
	rev := revision(t, srv.Endpoints())                       // nothing written since the snapshot
	if err := s.CommitManifest(ctx, mk(99), ""); err != nil { // after the backup
		t.Fatal(err)
	}
	s.Close()
	srv.Close()
	file := filepath.Join(t.TempDir(), "backup")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := etcdmeta.CheckBackup(file); err != nil || st.Revision != rev || st.Keys == 0 {
		t.Fatalf("CheckBackup: %+v, %v; want revision %d", st, err, rev)
	}

	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("r%d=%s", i, threePeer("r", i)))
	}
	dirs := make([]string, 3)
	for i := range dirs {
		dirs[i] = filepath.Join(t.TempDir(), "meta")
		if _, err := etcdmeta.Restore(etcdmeta.RestoreConfig{Snapshot: file, Dir: dirs[i], Name: fmt.Sprintf("r%d", i),
			PeerURL: threePeer("r", i), InitialCluster: strings.Join(initial, ",")}); err != nil {
			t.Fatal(err)
		}
	}
	var endpoints []string
	for _, srv := range startThree(t, "r", dirs) {
		endpoints = append(endpoints, srv.Endpoints()...)
	}
	r := open(t, endpoints, "")
	defer r.Close()
	for i := range 20 {
		m, err := r.Manifest(ctx, "bkt", mk(i).Key)
		if err != nil || m.Version != mk(i).Version {
			t.Fatalf("%s after restore: %+v, %v", mk(i).Key, m, err)
		}
	}
	if _, err := r.Manifest(ctx, "bkt", mk(99).Key); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a manifest committed after the backup: %v, want not found", err)
	}
	if err := r.CommitManifest(ctx, mk(50), ""); err != nil {
		t.Fatalf("the restored cluster refuses writes: %v", err)
	}
}

// revision is the etcd cluster's current revision.
func revision(t *testing.T, endpoints []string) int64 {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(t.Context(), "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
