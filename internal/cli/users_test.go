package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadUsers(t *testing.T) {
	root := s3Creds{AccessKey: "ROOTKEY", SecretKey: "root-secret"}
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "users.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write(`{"users":[{"name":"alice","access_key":"AK1","secret_key":"alice-secret","policies":["rep-3"]},{"name":"bob","access_key":"AK2","secret_key":"bob-secret!"}]}`)
	c, err := loadUsers(ok, root)
	if err != nil {
		t.Fatal(err)
	}
	if id, found := c.Lookup("AK1"); !found || id.Name != "alice" || id.Root || len(id.Policies) != 1 || id.Policies[0] != "rep-3" {
		t.Fatalf("alice: %+v %v", id, found)
	}
	if id, found := c.Lookup("ROOTKEY"); !found || !id.Root {
		t.Fatalf("root: %+v %v", id, found)
	}
	live := &liveCreds{}
	live.set(c)
	if _, found := live.Lookup("AK2"); !found {
		t.Fatal("live credentials lost bob")
	}
	for _, tc := range []struct{ body, mention string }{
		{`{"users":[{"name":"a","access_key":"K","secret_key":"short"}]}`, "at least 8"},
		{`{"users":[{"name":"a","access_key":"K","secret_key":"12345678"},{"name":"a","access_key":"L","secret_key":"12345678"}]}`, "used twice"},
		{`{"users":[{"name":"a","access_key":"ROOTKEY","secret_key":"12345678"}]}`, "used twice"},
		{`{"users":[{"name":"root","access_key":"X","secret_key":"12345678"}]}`, "used twice"},
		{`{"users":[{"access_key":"X","secret_key":"12345678"}]}`, "needs a name"},
		{`not json`, "users file"},
		{`{"users":[{"name":"a","access_key":"K","secret_key":"12345678","policies":["rs-0-1"]}]}`, `policy "rs-0-1"`},
	} {
		if _, err := loadUsers(write(tc.body), root); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.body, err, tc.mention)
		}
	}
	if _, err := loadUsers(filepath.Join(dir, "missing.json"), root); err == nil {
		t.Error("a missing users file was accepted")
	}
}

func TestParseDiskSpec(t *testing.T) {
	p, c, err := parseDiskSpec("/d1,bw=10MiB,lat=2ms,seek=8ms,wb=16MiB,bg=100ms:64KiB,bgseed=7")
	if err != nil || p != "/d1" || c.Bandwidth != 10<<20 || c.Latency.String() != "2ms" || c.Seek.String() != "8ms" || c.WriteBehind != 16<<20 ||
		c.BackgroundEvery.String() != "100ms" || c.BackgroundBytes != 64<<10 || c.BackgroundSeed != 7 {
		t.Fatalf("got %q %+v %v", p, c, err)
	}
	if p, c, err := parseDiskSpec("/plain"); err != nil || p != "/plain" || c.Enabled() {
		t.Fatalf("plain path: %q %+v %v", p, c, err)
	}
	for _, bad := range []string{"", ",bw=1MB", "/d,bw=0", "/d,bw=fast", "/d,lat=soon", "/d,seek=-1s", "/d,wb=0", "/d,bg=1s", "/d,bg=x:1MB", "/d,bgseed=0", "/d,bgseed=-3", "/d,color=red"} {
		if _, _, err := parseDiskSpec(bad); err == nil {
			t.Errorf("parseDiskSpec(%q) accepted", bad)
		}
	}
}
