package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/crypt"
	"cairn/meta/mem"
)

// memUserAdmin is a userAdmin over a fresh in-memory store; its output
// goes to the returned buffer.
func memUserAdmin(t *testing.T, secret string) (userAdmin, *mem.Store, *bytes.Buffer) {
	t.Helper()
	seal, err := crypt.UserSealKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	st := mem.New()
	var out bytes.Buffer
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	return userAdmin{st: st, seal: seal, now: func() time.Time { return now }, rand: strings.NewReader(strings.Repeat("0123456789abcdef", 64)), out: &out}, st, &out
}

// The user commands keep users in the store with sealed secrets that a
// gateway with the same cluster secret opens (and one with another does
// not); rotation and removal change what the gateway's table serves.
func TestUserAdmin(t *testing.T) {
	ctx := context.Background()
	a, st, out := memUserAdmin(t, "cluster-secret")
	a.rand = &randReader{}
	if err := a.add(ctx, "alice", s3Creds{}, false, []string{"rs-6-3"}); err != nil {
		t.Fatal(err)
	}
	if err := a.add(ctx, "bob", s3Creds{AccessKey: "AKBOB", SecretKey: "bob-secret"}, true, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "secret key: bob-secret") {
		t.Fatalf("add printed:\n%s", out)
	}
	u, err := st.User(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(u.SealedSecret, []byte("bob-secret")) {
		t.Fatal("the secret key is stored in the clear")
	}
	ids, skipped, err := storeIdentities(ctx, st, a.seal)
	if err != nil || len(skipped) != 0 || len(ids) != 2 {
		t.Fatalf("storeIdentities: %v, skipped %v, %v", ids, skipped, err)
	}
	if id := ids["AKBOB"]; id.SecretKey != "bob-secret" || !id.Root || id.Name != "bob" {
		t.Fatalf("bob reads back as %+v", id)
	}
	var alice cairn.User
	if alice, err = st.User(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if id := ids[alice.AccessKey]; id.Name != "alice" || id.Root || len(id.SecretKey) != 44 || strings.Join(id.Policies, ",") != "rs-6-3" {
		t.Fatalf("alice reads back as %+v", id)
	}
	// Another cluster secret opens nothing: the users are skipped, not served.
	other, _ := crypt.UserSealKey("another-secret")
	ids, skipped, err = storeIdentities(ctx, st, other)
	if err != nil || len(ids) != 0 || len(skipped) != 2 {
		t.Fatalf("with another cluster secret: %v, skipped %v, %v", ids, skipped, err)
	}

	// Rotation: a new access key; the old one is gone from the table.
	out.Reset()
	if err := a.rotate(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	ids, _, _ = storeIdentities(ctx, st, a.seal)
	if _, ok := ids[alice.AccessKey]; ok {
		t.Fatal("alice's old access key still served after rotation")
	}
	rotated, _ := st.User(ctx, "alice")
	if id := ids[rotated.AccessKey]; id.Name != "alice" || !strings.Contains(out.String(), rotated.AccessKey) {
		t.Fatalf("after rotation: %+v\n%s", id, out)
	}
	if err := a.setPolicy(ctx, "alice", []string{"rep-3", "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	if u, _ := st.User(ctx, "alice"); strings.Join(u.Policies, ",") != "rep-3,rs-4-2" || u.AccessKey != rotated.AccessKey {
		t.Fatalf("after set-policy: %+v", u)
	}
	if err := a.setPolicy(ctx, "alice", nil); err != nil {
		t.Fatal(err)
	}
	if u, _ := st.User(ctx, "alice"); len(u.Policies) != 0 {
		t.Fatalf("after set-policy --clear: %v", u.Policies)
	}
	out.Reset()
	if err := a.list(ctx, false); err != nil || !strings.Contains(out.String(), "AKBOB") || strings.Contains(out.String(), "bob-secret") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if err := a.remove(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	ids, _, _ = storeIdentities(ctx, st, a.seal)
	if _, ok := ids["AKBOB"]; ok {
		t.Fatal("bob still served after rm")
	}

	// Precise errors.
	for _, tc := range []struct {
		what    string
		err     error
		mention string
	}{
		{"add twice", a.add(ctx, "alice", s3Creds{}, false, nil), "exists"},
		{"add a taken key", a.add(ctx, "carol", s3Creds{AccessKey: rotated.AccessKey, SecretKey: "12345678"}, false, nil), "taken"},
		{"add a bad name", a.add(ctx, "a/b", s3Creds{}, false, nil), "user name"},
		{"add a short secret", a.add(ctx, "dave", s3Creds{AccessKey: "AKDAVE", SecretKey: "short"}, false, nil), "8 to 128"},
		{"add a bad key", a.add(ctx, "dave", s3Creds{AccessKey: "A/K", SecretKey: "12345678"}, false, nil), "access key"},
		{"add root, not root", a.add(ctx, "root", s3Creds{}, false, nil), "only a --root user"},
		{"rm nobody", a.remove(ctx, "nobody"), `no user "nobody"`},
		{"rotate nobody", a.rotate(ctx, "nobody"), `no user "nobody"`},
		{"set-policy nobody", a.setPolicy(ctx, "nobody", nil), `no user "nobody"`},
	} {
		if !errors.Is(tc.err, ErrUsage) || !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: %v, want a usage error mentioning %q", tc.what, tc.err, tc.mention)
		}
	}
	if _, err := parsePolicies("rs-4-2,bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("parsePolicies of a bogus policy: %v", err)
	}
}

// randReader is an endless source of varying bytes (keys differ per call).
type randReader struct{ n byte }

func (r *randReader) Read(p []byte) (int, error) {
	for i := range p {
		r.n++
		p[i] = r.n * 31
	}
	return len(p), nil
}

// import adds a users file's users with their keys and reports the ones
// that exist.
func TestUserImport(t *testing.T) {
	ctx := context.Background()
	a, st, out := memUserAdmin(t, "cluster-secret")
	dir := t.TempDir()
	p := filepath.Join(dir, "users.json")
	body := `{"users":[{"name":"alice","access_key":"AK1","secret_key":"alice-secret","policies":["rep-3"]},{"name":"bob","access_key":"AK2","secret_key":"bob-secret!"}]}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.importFile(ctx, p); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	ids, _, err := storeIdentities(ctx, st, a.seal)
	if err != nil || ids["AK1"].SecretKey != "alice-secret" || ids["AK2"].Name != "bob" || strings.Join(ids["AK1"].Policies, ",") != "rep-3" {
		t.Fatalf("imported: %v %v", ids, err)
	}
	err = a.importFile(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "alice, bob") {
		t.Fatalf("second import: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"users":[{"name":"x","access_key":"AK9","secret_key":"short"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.importFile(ctx, p); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "8 to 128") {
		t.Fatalf("import of a short secret: %v", err)
	}
	for body, mention := range map[string]string{
		`{"users":[{"name":"x","access_key":"AK9","secret_key":"12345678","policies":["bogus"]}]}`: `policy "bogus"`,
		`{"users":[{"name":"root","access_key":"AK9","secret_key":"12345678"}]}`:                   "root's",
	} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := a.importFile(ctx, p); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), mention) {
			t.Errorf("import of %s: %v, want a usage error mentioning %q", body, err, mention)
		}
	}
}

// The gateway's table: flags and file win over the store; a refresh
// swaps the store's users whole.
func TestUserTable(t *testing.T) {
	ctx := context.Background()
	a, st, _ := memUserAdmin(t, "cluster-secret")
	live := &liveCreds{}
	c, err := loadUsers("", s3Creds{AccessKey: "ROOTKEY", SecretKey: "root-secret"})
	if err != nil {
		t.Fatal(err)
	}
	live.set(c)
	table := &userTable{static: live}
	counted := &countingUsers{Store: st}
	su := &storeUsers{table: table, st: counted, seal: a.seal, every: time.Hour, log: logger(&bytes.Buffer{}, false)}
	if err := a.add(ctx, "root-twin", s3Creds{AccessKey: "ROOTKEY", SecretKey: "other-secret"}, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.add(ctx, "carol", s3Creds{AccessKey: "AKCAROL", SecretKey: "carol-secret"}, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := table.Lookup("AKCAROL"); ok {
		t.Fatal("carol served before the first read")
	}
	if err := su.load(ctx); err != nil {
		t.Fatal(err)
	}
	if id, ok := table.Lookup("AKCAROL"); !ok || id.SecretKey != "carol-secret" {
		t.Fatalf("carol: %+v %v", id, ok)
	}
	if id, _ := table.Lookup("ROOTKEY"); !id.Root || id.SecretKey != "root-secret" {
		t.Fatalf("the flags' root lost to the store: %+v", id)
	}
	// Nothing changed: a refresh reads the stamp, not the users.
	before := counted.pages
	if err := su.load(ctx); err != nil {
		t.Fatal(err)
	}
	if counted.pages != before {
		t.Fatalf("a refresh with no change read %d pages of users", counted.pages-before)
	}
	if err := a.remove(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if err := su.load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := table.Lookup("AKCAROL"); ok {
		t.Fatal("carol still served after rm and a refresh")
	}
}

// The user commands' argument errors are usage errors saying what is
// wrong, found before any cluster is contacted.
func TestUserCommandUsage(t *testing.T) {
	t.Setenv("CAIRN_ACCESS_KEY", "")
	t.Setenv("CAIRN_SECRET_KEY", "")
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"admin", "user", "add"}, "takes 1 argument"},
		{[]string{"admin", "user", "add", "a", "b"}, "takes 1 argument"},
		{[]string{"admin", "user", "add", "a", "--access-key", "AKA"}, "both --access-key and --secret-key"},
		{[]string{"admin", "user", "add", "a", "--policies", "rs-4-2,bogus"}, `--policies: policy "bogus"`},
		{[]string{"admin", "user", "set-policy", "a"}, "give the policies"},
		{[]string{"admin", "user", "set-policy", "a", "rs-4-2", "--clear"}, "not both"},
		{[]string{"admin", "user", "set-policy", "a", "rs-9-x"}, `policy "rs-9-x"`},
		{[]string{"admin", "user", "rm"}, "takes 1 argument"},
		{[]string{"admin", "user", "list", "x"}, "takes 0 argument"},
		{[]string{"admin", "user", "rotate", "a", "--endpoint", "http://127.0.0.1:1"}, "needs root's keys"},
		{[]string{"admin", "user", "add", "a", "--access-key", "AKA", "--secret-key", "12345678", "--endpoint", "http://127.0.0.1:1",
			"--root-access-key", "R", "--root-secret-key", "S"}, "never over the network"},
		{[]string{"admin", "user", "list", "--endpoint", "ftp://x", "--root-access-key", "R", "--root-secret-key", "S"}, "want http://HOST:PORT"},
		{[]string{"admin", "user", "frob"}, "unknown command"},
		{[]string{"admin", "user", "default-policy"}, "give the policies"},
		{[]string{"admin", "user", "default-policy", "rs-4-2", "--clear"}, "not both"},
		{[]string{"admin", "user", "default-policy", "nope"}, `policy "nope"`},
	} {
		_, _, err := run(t, tc.args...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: %v, want a usage error mentioning %q", tc.args, err, tc.mention)
		}
	}
}

// The admin path's handler: an op survives its encoding, a change runs
// the gateway's hook, and errors get the statuses sendUserOp turns back
// into usage errors.
func TestUserAdminHandler(t *testing.T) {
	a, st, _ := memUserAdmin(t, "cluster-secret")
	changed := 0
	h := userAdminHandler{admin: a, changed: func(context.Context) error { changed++; return nil }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	op := userOp{Op: "add", Name: "alice", Root: true, Policies: []string{"rs-4-2", "rep-3"}}
	back, err := parseUserOp(op.query())
	if err != nil || back.Op != "add" || back.Name != "alice" || !back.Root || strings.Join(back.Policies, ",") != "rs-4-2,rep-3" {
		t.Fatalf("round trip of %+v: %+v, %v", op, back, err)
	}
	var out bytes.Buffer
	// sendUserOp signs; the handler here does not check (the s3 handler does).
	if err := sendUserOp(context.Background(), srv.URL, s3Creds{AccessKey: "R", SecretKey: "S"}, op, &out); err != nil {
		t.Fatal(err)
	}
	if u, err := st.User(context.Background(), "alice"); err != nil || !u.Root || !strings.Contains(out.String(), u.AccessKey) || changed != 1 {
		t.Fatalf("after add through the handler: %+v %v, printed %q, hook ran %d times", u, err, out.String(), changed)
	}
	err = sendUserOp(context.Background(), srv.URL, s3Creds{AccessKey: "R", SecretKey: "S"}, op, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second add: %v", err)
	}
	err = sendUserOp(context.Background(), srv.URL, s3Creds{AccessKey: "R", SecretKey: "S"}, userOp{Op: "frob", Name: "x"}, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "frob") {
		t.Fatalf("unknown op: %v", err)
	}
	if changed != 1 {
		t.Fatalf("the hook ran %d times, want once (failed changes do not run it)", changed)
	}
}

// countingUsers counts the pages of users read.
type countingUsers struct {
	*mem.Store
	pages int
}

func (c *countingUsers) Users(ctx context.Context, after string, limit int) ([]cairn.User, bool, error) {
	c.pages++
	return c.Store.Users(ctx, after, limit)
}

// The cluster's default allow-list reaches the users without one of
// their own, and only them; cleared, they fall back to the gateway's.
func TestUserDefaultPolicy(t *testing.T) {
	ctx := context.Background()
	a, st, out := memUserAdmin(t, "cluster-secret")
	a.rand = &randReader{}
	if err := a.add(ctx, "own", s3Creds{AccessKey: "AKOWN", SecretKey: "own-secret"}, false, []string{"rs-6-3"}); err != nil {
		t.Fatal(err)
	}
	if err := a.add(ctx, "plain", s3Creds{AccessKey: "AKPLAIN", SecretKey: "plain-secret"}, false, nil); err != nil {
		t.Fatal(err)
	}
	policies := func() (own, plain string) {
		t.Helper()
		ids, _, err := storeIdentities(ctx, st, a.seal)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(ids["AKOWN"].Policies, ","), strings.Join(ids["AKPLAIN"].Policies, ",")
	}
	if own, plain := policies(); own != "rs-6-3" || plain != "" {
		t.Fatalf("before: own %q, plain %q", own, plain)
	}
	if err := a.setDefaultPolicy(ctx, []string{"rep-3", "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	if own, plain := policies(); own != "rs-6-3" || plain != "rep-3,rs-4-2" {
		t.Fatalf("with the cluster's list: own %q, plain %q", own, plain)
	}
	if !strings.Contains(out.String(), "may choose: rep-3, rs-4-2") {
		t.Fatalf("default-policy printed:\n%s", out)
	}
	if err := a.setDefaultPolicy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if own, plain := policies(); own != "rs-6-3" || plain != "" {
		t.Fatalf("cleared: own %q, plain %q", own, plain)
	}
}
