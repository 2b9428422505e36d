package testcluster_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// A gateway, a node and a CLI command given a secret that is not the
// cluster's exit at start with a message that says so and where the
// secret came from (issue #24): before, the gateway served and answered
// AccessDenied on PUT. The cluster's node recorded the secret's check
// value at its start.
func TestWrongSecretIsRefusedAtStart(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config{})
	c.CLI(t, "mb", "photos") // the right secret passes

	dir := t.TempDir()
	wrongConf := filepath.Join(dir, "wrong.conf")
	b, _ := json.Marshal(map[string]any{"meta": c.MetaEndpoints(), "secret": "not-the-cluster-secret"})
	if err := os.WriteFile(wrongConf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	wrongSecret := filepath.Join(dir, "wrong-secret")
	if err := os.WriteFile(wrongSecret, []byte("not-the-cluster-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		from string // the file the message must name
	}{
		{"gateway", []string{"gateway", "--config", wrongConf, "--s3-addr", "127.0.0.1:0",
			"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey}, wrongConf},
		{"node", []string{"node", "--id", "node9", "--meta", strings.Join(c.MetaEndpoints(), ","),
			"--secret-file", wrongSecret, "--addr", "127.0.0.1:0", "--disk", filepath.Join(dir, "disk1")}, wrongSecret},
		{"cli ls", []string{"ls", "--config", wrongConf}, wrongConf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, testcluster.Binary(t), tc.args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("cairn %s: %v, want exit status 1; output:\n%s", tc.name, err, out)
			}
			if !strings.Contains(string(out), "wrong cluster secret") || !strings.Contains(string(out), tc.from) {
				t.Fatalf("cairn %s says:\n%s\nwant \"wrong cluster secret\" and %s", tc.name, out, tc.from)
			}
		})
	}
	if out := c.CLI(t, "ls"); !strings.Contains(out, "photos") {
		t.Fatalf("cairn ls with the right secret after the refusals:\n%s", out)
	}
}

// checkValue is the secret check value of secret (docs/design/meta.md,
// "Secret check"), computed here from its definition.
func checkValue(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("cairn secret check v1"))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// A metadata member given the check value (as cairn init's configs give
// it) records it at start: the first node to come, if its secret is
// another, is refused; the right one serves; and a member restarted with
// another cluster's value exits.
func TestMemberRecordsTheSecretCheck(t *testing.T) {
	dir := t.TempDir()
	member := []string{"meta", "--name", "meta1", "--data", filepath.Join(dir, "meta1"),
		"--client-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0"}
	m := testcluster.StartProc(t, "meta1", append(member, "--secret-check", checkValue("the right secret"))...)
	ep := m.Addr(proc.Meta)
	node := func(secret string) []string {
		f := filepath.Join(dir, "secret-"+strings.ReplaceAll(secret, " ", "-"))
		if err := os.WriteFile(f, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		return proc.NodeArgs("node1", []string{ep}, f, []string{filepath.Join(dir, "node1", "disk1")})
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testcluster.Binary(t), node("a wrong secret")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong cluster secret") {
		t.Fatalf("the first node, with a wrong secret: %v\n%s", err, out)
	}
	testcluster.StartProc(t, "node1", node("the right secret")...)

	m.Kill()
	out, err = exec.CommandContext(ctx, testcluster.Binary(t), append(member, "--secret-check", checkValue("another cluster's"))...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong cluster secret") || !strings.Contains(string(out), "--secret-check") {
		t.Fatalf("a member restarted with another check value: %v\n%s", err, out)
	}
}
