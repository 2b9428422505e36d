package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/proc"
	"cairn/node"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func TestLogFlags(t *testing.T) {
	tests := []struct {
		args    []string
		err     string // "" = no error
		logged  []string
		dropped []string
	}{
		{args: nil, logged: []string{"level=WARN", "level=ERROR"}, dropped: []string{"level=INFO", "level=DEBUG"}},
		{args: []string{"-v"}, logged: []string{"level=INFO"}, dropped: []string{"level=DEBUG"}},
		{args: []string{"--log-level", "debug"}, logged: []string{"level=DEBUG", "level=INFO"}},
		{args: []string{"--log-level", "error", "-v"}, logged: []string{"level=ERROR"}, dropped: []string{"level=WARN", "level=INFO"}},
		{args: []string{"--log-level", "INFO"}, logged: []string{"level=INFO"}, dropped: []string{"level=DEBUG"}},
		{args: []string{"--log-format", "json", "--log-level", "info"}, logged: []string{`"level":"INFO"`}, dropped: []string{`"level":"DEBUG"`}},
		{args: []string{"--log-level", "loud"}, err: `--log-level "loud": want debug, info, warn or error`},
		{args: []string{"--log-level", "info+2"}, err: `--log-level "info+2"`},
		{args: []string{"--log-format", "xml"}, err: `--log-format "xml": want text or json`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			lf := addLogFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log, err := lf.logger(&buf)
			if tc.err != "" {
				if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want a usage error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			for _, w := range tc.logged {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("no %s in\n%s", w, &buf)
				}
			}
			for _, w := range tc.dropped {
				if strings.Contains(buf.String(), w) {
					t.Errorf("%s logged:\n%s", w, &buf)
				}
			}
		})
	}
}

// Known secrets for TestLogsHoldNoSecrets: the cluster secret, the root's
// and a user's S3 secret keys.
const (
	testClusterSecret = "c1a55ec7e7c1a55ec7e7c1a55ec7e7c1a55ec7e7c1a55ec7e7c1a55ec7e7c1a5"
	testRootSecret    = "R00TSECRETkey-must-never-be-logged"
	testUserSecret    = "USERSECRETkey-must-never-be-logged"
)

// startLoggingServer starts `cairn server` with the known secrets and
// args, at debug level: everything it may log, it logs.
func startLoggingServer(t *testing.T, args ...string) *testServer {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(testClusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServerIn(t, dir, append([]string{"--access-key", "ROOTAK", "--secret-key", testRootSecret,
		"--log-level", "debug", "--users-refresh", "100ms"}, args...)...)
}

// s3Client returns a minio client of the server's S3 API.
func s3Client(t *testing.T, s *testServer, ak, sk string) *minio.Client {
	t.Helper()
	u, err := url.Parse(s.Ready.Addrs[proc.S3])
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A server's log holds none of its secrets, at any level: not the cluster
// secret, not the root's or a user's S3 secret key, not an Authorization
// header or a presigned URL's signature — after good requests, requests
// with a wrong signature, and a user added while it runs.
func TestLogsHoldNoSecrets(t *testing.T) {
	s := startLoggingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := s3Client(t, s, "ROOTAK", testRootSecret)
	if err := root.MakeBucket(ctx, "bkt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, "bkt", "k", strings.NewReader("hello"), 5, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.StatObject(ctx, "bkt", "missing", minio.StatObjectOptions{}); err == nil {
		t.Fatal("stat of a missing key succeeded")
	}
	wrong := s3Client(t, s, "ROOTAK", testRootSecret+"x")
	if _, err := wrong.ListBuckets(ctx); minio.ToErrorResponse(err).Code != "SignatureDoesNotMatch" {
		t.Fatalf("a wrong signature got %v, want SignatureDoesNotMatch", err)
	}
	presigned, err := wrong.PresignedGetObject(ctx, "bkt", "k", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(presigned.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a presigned URL with a wrong signature got %s, want 403", resp.Status)
	}

	s.CLI(t, "admin", "user", "add", "alice", "--access-key", "ALICEAK", "--secret-key", testUserSecret)
	alice := s3Client(t, s, "ALICEAK", testUserSecret)
	for {
		_, err := alice.ListBuckets(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("alice is not served after 2 minutes: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // real time: the server re-reads its users every 100ms
	}
	badAlice := s3Client(t, s, "ALICEAK", "not-"+testUserSecret)
	if _, err := badAlice.ListBuckets(ctx); minio.ToErrorResponse(err).Code != "SignatureDoesNotMatch" {
		t.Fatalf("alice with a wrong secret got %v, want SignatureDoesNotMatch", err)
	}

	logs := s.Stop(t)
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "SignatureDoesNotMatch") {
		t.Fatalf("the server logged no failed request at debug level; the test checks nothing:\n%s", logs)
	}
	sig := presigned.Query().Get("X-Amz-Signature")
	secrets := []string{testClusterSecret, testRootSecret, testUserSecret, "Signature=", "X-Amz-Signature", sig}
	// The node-protocol keys the server's roles derive from the cluster
	// secret (as role/name:hex; the hex alone is the secret part).
	for _, id := range []node.KeyID{gatewayKey(), cliKey, {Role: node.RoleNode, Name: "node1"}, {Role: node.RoleDirector, Name: "node1"}} {
		k, err := node.DeriveKey(testClusterSecret, id)
		if err != nil {
			t.Fatal(err)
		}
		_, hex, _ := strings.Cut(k.String(), ":")
		secrets = append(secrets, hex)
	}
	for _, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
}

// With --log-format json every line the server logs is a JSON object with
// time, level and msg, and records use the shared keys (node, disk,
// bucket, key, upload, err).
func TestLogFormatJSON(t *testing.T) {
	s := startLoggingServer(t, "--log-format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := s3Client(t, s, "ROOTAK", testRootSecret)
	if err := root.MakeBucket(ctx, "jbkt", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.StatObject(ctx, "jbkt", "no/such", minio.StatObjectOptions{}); err == nil {
		t.Fatal("stat of a missing key succeeded")
	}
	core := minio.Core{Client: root}
	if _, err := core.PutObjectPart(ctx, "jbkt", "mp", "no-such-upload", 1, strings.NewReader("x"), 1, minio.PutObjectPartOptions{}); err == nil {
		t.Fatal("a part of a missing upload was stored")
	}
	logs := s.Stop(t)
	keys := map[string]bool{}
	var failed map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", lines, err, sc.Bytes())
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("line %d has no %q: %s", lines, k, sc.Bytes())
			}
		}
		for k := range rec {
			keys[k] = true
		}
		if rec["msg"] == "s3 request failed" && rec["key"] == "no/such" {
			failed = rec
			if _, ok := rec["upload"]; ok {
				t.Errorf("a request of no upload logs one: %s", sc.Bytes())
			}
		}
		if rec["msg"] == "s3 request failed" && rec["key"] == "mp" && rec["upload"] != "no-such-upload" {
			t.Errorf("a part of upload no-such-upload is logged as %s", sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	for _, k := range []string{"node", "disk", "bucket", "key", "upload", "err"} {
		if !keys[k] {
			t.Errorf("no record has the key %q; keys: %v", k, keys)
		}
	}
	if failed == nil || failed["bucket"] != "jbkt" || failed["code"] != "NoSuchKey" || failed["level"] != "DEBUG" {
		t.Errorf("the failed stat is logged as %v", failed)
	}
}

// Every long-running process takes the logging flags.
func TestLogFlagsEverywhere(t *testing.T) {
	for _, cmd := range []string{"server", "gateway", "node", "meta"} {
		out, errs, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatalf("cairn %s --help: %v", cmd, err)
		}
		for _, f := range []string{"-log-format", "-log-level", "-v\t"} {
			if !strings.Contains(out+errs, f) {
				t.Errorf("cairn %s has no %s flag:\n%s%s", cmd, f, out, errs)
			}
		}
	}
	// A bad format is refused before anything starts.
	if _, _, err := run(t, "meta", "--data", t.TempDir(), "--log-format", "xml"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("cairn meta --log-format xml: %v", err)
	}
}
