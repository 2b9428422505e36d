package s3

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The admin path: a root identity's SignV4-signed POST reaches
// Config.Admin with its query; anyone else, another method, a body, a
// tampered query or no Admin get S3 errors.
func TestAdminPath(t *testing.T) {
	creds := RootCredentials(testAccess, testSecret)
	creds["AKALICE"] = Identity{Name: "alice", AccessKey: "AKALICE", SecretKey: "alice-secret"}
	e := newEnvWith(t, creds)
	var got string
	e.h.cfg.Admin = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query().Get("name")
		io.WriteString(w, "done "+r.URL.Query().Get(AdminQuery))
	})
	req := func(method, query, ak, sk string, body string) *http.Request {
		r, err := http.NewRequest(method, e.srv.URL+"/?"+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		SignV4(r, ak, sk, testRegion, time.Now())
		return r
	}
	st, body := do(t, req("POST", "cairn-admin=user-add&name=bob%20b", testAccess, testSecret, ""))
	if st != http.StatusOK || body != "done user-add" || got != "bob b" {
		t.Fatalf("root's admin request: %d %q (name %q)", st, body, got)
	}
	for _, tc := range []struct {
		what   string
		r      *http.Request
		status int
		code   string
	}{
		{"not root", req("POST", "cairn-admin=user-add&name=x", "AKALICE", "alice-secret", ""), 403, "AccessDenied"},
		{"GET", req("GET", "cairn-admin=user-add&name=x", testAccess, testSecret, ""), 405, "MethodNotAllowed"},
		{"a body", req("POST", "cairn-admin=user-add&name=x", testAccess, testSecret, "x"), 400, "InvalidRequest"},
		{"wrong secret", req("POST", "cairn-admin=user-add&name=x", testAccess, "wrong-secret", ""), 403, "SignatureDoesNotMatch"},
	} {
		st, body := do(t, tc.r)
		if st != tc.status || !strings.Contains(body, "<Code>"+tc.code+"</Code>") {
			t.Errorf("%s: %d %s, want %d %s", tc.what, st, body, tc.status, tc.code)
		}
	}
	tampered := req("POST", "cairn-admin=user-add&name=x", testAccess, testSecret, "")
	tampered.URL.RawQuery = "cairn-admin=user-rm&name=x"
	if st, body := do(t, tampered); st != http.StatusForbidden {
		t.Errorf("tampered query: %d %s", st, body)
	}
	e.h.cfg.Admin = nil
	if st, body := do(t, req("POST", "cairn-admin=user-add&name=x", testAccess, testSecret, "")); st != http.StatusNotImplemented {
		t.Errorf("no admin path: %d %s", st, body)
	}
}
