package etcdmeta

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/soheilhy/cmux"
	"go.uber.org/zap"

	"cairn"
	"cairn/internal/proc"
)

// TestDeleteBucketWindow commits an object between DeleteBucket's probe
// (which finds the bucket empty) and its Txn: the Txn's range compare must
// see it, so the delete fails and the manifest keeps its bucket.
func TestDeleteBucketWindow(t *testing.T) {
	ctx := t.Context()
	srv, err := StartEmbedded(ctx, EmbedConfig{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0",
		PeerURL: "http://127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := Open(ctx, srv.Endpoints(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, srv.Endpoints(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "window"}); err != nil {
		t.Fatal(err)
	}
	m := &cairn.Manifest{Bucket: "window", Key: "late", Version: "v1", Policy: "rep-1",
		Layout: cairn.Layout{BlockSize: 1, Shards: []cairn.ShardLoc{{Disk: "node1/disk1", Size: 1}}}}
	s.testAfterProbe = func() {
		s.testAfterProbe = nil
		if err := other.CommitManifest(ctx, m, ""); err != nil {
			t.Errorf("commit in the window: %v", err)
		}
	}
	if err := s.DeleteBucket(ctx, "window"); !errors.Is(err, cairn.ErrBucketNotEmpty) {
		t.Fatalf("DeleteBucket with an object committed after its probe: %v", err)
	}
	if _, err := s.Manifest(ctx, "window", "late"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bucket(ctx, "window"); err != nil {
		t.Fatal(err)
	}

	// And the other way round: the bucket deleted in the window.
	if _, err := s.DeleteManifest(ctx, "window", "late", ""); err != nil {
		t.Fatal(err)
	}
	s.testAfterProbe = func() {
		s.testAfterProbe = nil
		if err := other.DeleteBucket(ctx, "window"); err != nil {
			t.Errorf("delete in the window: %v", err)
		}
	}
	if err := s.DeleteBucket(ctx, "window"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("DeleteBucket of a bucket deleted after its probe: %v", err)
	}
}

func TestVersionCompare(t *testing.T) {
	// A record of version v lies strictly between the bounds of head(v)
	// (manifestRecord), and outside them for every other version.
	versions := []string{"", "v", "v1", "v10", "v1,", `v"`, "v\\", "v<", "ü", "0123456789abcdef0123456789abcdef"}
	for _, stored := range versions {
		rec, err := encodeManifest(&cairn.Manifest{Bucket: "b", Key: "k", Version: stored})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			lo := recordHead(v)
			hi := lo[:len(lo)-1] + "-"
			in := lo < rec && rec < hi
			if in != (v == stored) {
				t.Errorf("record of %q within bounds of %q: %v", stored, v, in)
			}
		}
		m, _, err := decodeHead("b", "k", []byte(rec))
		if err != nil || m.Version != stored {
			t.Errorf("decode %q: %v %v", rec, m, err)
		}
	}
}

func TestZapToSlog(t *testing.T) {
	var buf bytes.Buffer
	lg := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
	lg.Info("chatty")
	lg.Warn("warned")
	lg.Named("raft").With(zap.String("member", "m1")).Error("failed", zap.Int("term", 3), zap.Error(errors.New("boom")))
	out := buf.String()
	if strings.Contains(out, "chatty") || strings.Contains(out, "warned") {
		t.Errorf("records below error level passed: %s", out)
	}
	for _, want := range []string{"level=ERROR", `msg=failed`, "logger=raft", "member=m1", "term=3", "err=boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %s", want, out)
		}
	}
	zapLogger(nil, nil).Error("dropped") // must not panic
}

// etcd's storage version monitor, retrying on a member that has no term
// yet, passes as a warning; other errors stay errors.
func TestZapStorageVersionIsAWarning(t *testing.T) {
	var buf bytes.Buffer
	lg := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), nil)
	lg.Error("failed to update storage version", zap.String("cluster-version", "3.6.0"),
		zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	lg.Error("failed to update something else", zap.Error(errors.New("boom")))
	out := buf.String()
	for _, want := range []string{`level=WARN msg="failed to update storage version"`, `level=ERROR msg="failed to update something else"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %s", want, out)
		}
	}
}

// Errors a stop causes (closed listeners and servers) pass at debug level
// once stopping is set; other errors, and the same errors before, stay
// errors.
func TestZapStopErrors(t *testing.T) {
	var buf bytes.Buffer
	var stopping atomic.Bool
	lg := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), &stopping)
	closed := fmt.Errorf("accept tcp 127.0.0.1:1: %w", net.ErrClosed)
	lg.Error("before", zap.Error(closed))
	stopping.Store(true)
	lg.Error("expected", zap.Error(closed))
	lg.Error("expected", zap.Error(http.ErrServerClosed))
	lg.Error("expected", zap.Error(cmux.ErrServerClosed))
	lg.Error("unexpected", zap.Error(errors.New("boom")))
	out := buf.String()
	for _, want := range []string{"level=ERROR msg=before", "level=ERROR msg=unexpected"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %s", want, out)
		}
	}
	if strings.Contains(out, "msg=expected") { // debug records do not pass the info handler
		t.Errorf("an error a stop causes passed above debug level:\n%s", out)
	}
}

// A clean stop of an embedded member logs no error (etcd reports its
// closed listeners and servers at error level).
func TestEmbeddedCleanStopLogsNoError(t *testing.T) {
	buf := proc.NewOutput() // safe for etcd's concurrent writers
	srv, err := StartEmbedded(t.Context(), EmbedConfig{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0",
		PeerURL: "http://127.0.0.1:0", UnsafeNoFsync: true, Logger: slog.New(slog.NewTextHandler(buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), srv.Endpoints(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutNode(t.Context(), cairn.Node{ID: "n1", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	srv.Close() // returns once etcd's serving goroutines have logged
	if out := buf.String(); strings.Contains(out, "level=ERROR") {
		t.Fatalf("a clean stop logged errors:\n%s", out)
	}
}
