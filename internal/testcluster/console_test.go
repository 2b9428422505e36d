package testcluster_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"cairn"
	"cairn/console"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// chromium returns the Chromium (or Chrome) the browser tests drive:
// $CAIRN_CHROMIUM, else the first of the usual names on $PATH. It skips
// the test if there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CAIRN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on $PATH: the web console's browser tests need one (apt-get install chromium, or set CAIRN_CHROMIUM)")
	return ""
}

// testOut is where a test writes what a person may want to look at
// (screenshots): $CAIRN_TEST_OUT/TEST if set, else the test's temporary
// directory.
func testOut(t *testing.T) string {
	t.Helper()
	d := os.Getenv("CAIRN_TEST_OUT")
	if d == "" {
		return t.TempDir()
	}
	d = filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// page is one headless Chromium tab.
type page struct {
	t   *testing.T
	ctx context.Context
	out string // testOut

	mu         sync.Mutex
	exceptions []string // the page's uncaught JavaScript exceptions; guarded by mu
}

// newPage starts headless Chromium for the test; it ends with the test
// or after limit.
func newPage(t *testing.T, limit time.Duration) *page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	p := &page{t: t, out: testOut(t)}
	// Every uncaught exception of the page's JavaScript fails the test.
	listen := func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok && e.ExceptionDetails != nil {
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			p.mu.Lock()
			p.exceptions = append(p.exceptions, msg)
			p.mu.Unlock()
		}
	}
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf), chromedp.WithListener(listen))
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, e := range p.exceptions {
			t.Errorf("the page threw: %s", e)
		}
	})
	t.Cleanup(cancelBrowser)
	p.ctx = bctx
	p.run(chromedp.Navigate("about:blank")) // starts the browser
	return p
}

// run runs actions in the tab; it fails the test on error.
func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page, awaiting a promise,
// into v (a pointer).
func (p *page) eval(expr string, v any) {
	p.t.Helper()
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("browser: evaluating %s: %v", expr, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		p.t.Fatalf("browser: %s gave %s: %v", expr, raw, err)
	}
}

// cookies returns the browser's cookies for the page's URL.
func (p *page) cookies() []*network.Cookie {
	p.t.Helper()
	cs, err := chromedp.Run(p.ctx, chromedp.Action[[]*network.Cookie](func(ctx context.Context, t *chromedp.Target) ([]*network.Cookie, error) {
		r, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
		return r.Cookies, err
	}))
	if err != nil {
		p.t.Fatalf("browser: cookies: %v", err)
	}
	return cs
}

// text returns the text of the first element matching the CSS selector
// ("" if none).
func (p *page) text(sel string) string {
	p.t.Helper()
	var s string
	p.eval(fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel), &s)
	return s
}

// waitJS waits until the JavaScript expression is true in the page.
func (p *page) waitJS(d time.Duration, what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		var ok bool
		p.eval(expr, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for %s (%s)", d, what, expr)
		}
		// real time: the page and the server are real processes; polled.
		time.Sleep(250 * time.Millisecond)
	}
}

// screenshot writes the whole page as PNG to the test's output directory.
func (p *page) screenshot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("browser: screenshot: %v", err)
	}
	path := filepath.Join(p.out, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// The web console in a real browser against a real cairn server: a wrong
// secret gets no session, the right one shows the cluster; a bucket is
// made, a file uploaded (with progress) and downloaded (the same bytes),
// a prefix browsed, the manifest shown as cairn stat has it; then a disk
// directory is removed and the cluster view shows the disk go down, the
// repair queue fill and drain, and the disk come back up. Screenshots of
// the cluster and manifest views go to the test's output directory.
func TestConsoleInBrowser(t *testing.T) {
	chromium(t) // skip before starting a server
	s := testcluster.StartServer(t, "", "--grace", "2s", "--repair-scan", "1s", "--repair-rate", "512KiB")
	t.Cleanup(func() {
		if t.Failed() {
			lines := strings.Split(s.Output(), "\n")
			t.Logf("server (last lines):\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
	con := s.Addr(proc.Console)
	if con == "" {
		t.Fatalf("the server's ready line names no console: %v", s.Ready())
	}
	p := newPage(t, 8*time.Minute)

	p.run(chromedp.Navigate(con), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	p.probeExceptions()

	// A wrong secret: an error on the page, no session, no cookie.
	p.run(
		chromedp.SendKeys(chromedp.CSS("#access-key"), s.AccessKey),
		chromedp.SendKeys(chromedp.CSS("#secret-key"), s.SecretKey+"x"),
		chromedp.Click(chromedp.CSS("#login-btn")))
	p.waitJS(10*time.Second, "the login error", `document.getElementById("login-error").textContent.includes("Login failed")`)
	var status int
	p.eval(`fetch("/api/session").then(r => r.status)`, &status)
	if status != 401 {
		t.Fatalf("after a wrong secret GET /api/session is %d, want 401", status)
	}
	for _, c := range p.cookies() {
		if c.Name == console.CookieName {
			t.Fatalf("a wrong secret got a session cookie: %+v", c)
		}
	}
	if !p.visible("#view-login") || p.visible("#view-cluster") {
		t.Fatal("after a wrong secret the page shows more than the login")
	}

	// The right secret: the cluster view with the server's 8 disks up.
	var cleared string
	p.eval(`document.getElementById("secret-key").value = ""`, &cleared)
	p.run(chromedp.SendKeys(chromedp.CSS("#secret-key"), s.SecretKey),
		chromedp.Click(chromedp.CSS("#login-btn")),
		chromedp.WaitVisible(chromedp.CSS("#view-cluster")))
	p.waitJS(20*time.Second, "8 disks up in the cluster view",
		`document.querySelectorAll('#disks tbody td.state-up').length === 8`)
	// The speculative engine's panel: its counters, from the server's data path.
	p.waitJS(20*time.Second, "the speculative engine's panel",
		`document.querySelectorAll('#engine tbody tr[data-counter]').length === 8 && document.getElementById('engine-none').hidden`)
	if who := p.text("#whoami"); !strings.Contains(who, "root") {
		t.Fatalf("logged in as %q", who)
	}
	cookies := p.cookies()
	found := false
	for _, c := range cookies {
		if c.Name == console.CookieName {
			found = c.HTTPOnly && c.SameSite == network.CookieSameSiteStrict
		}
	}
	if !found {
		t.Fatalf("no HttpOnly SameSite=Strict session cookie after the login: %+v", cookies)
	}

	// A bucket with a policy.
	p.run(chromedp.Click(chromedp.CSS("#nav-buckets")), chromedp.WaitVisible(chromedp.CSS("#view-buckets")),
		chromedp.SendKeys(chromedp.CSS("#new-bucket-name"), "photos"),
		chromedp.SendKeys(chromedp.CSS("#new-bucket-policy"), "rs-4-2"),
		chromedp.Click(chromedp.CSS("#create-bucket")))
	p.waitJS(10*time.Second, "the new bucket listed", `!!document.querySelector('#buckets tr[data-bucket="photos"]')`)
	if pol := p.text(`#buckets tr[data-bucket="photos"] td:nth-child(2)`); pol != "rs-4-2" {
		t.Fatalf("the bucket's policy shows as %q", pol)
	}

	// Objects under a prefix, and load for the repair below, over S3.
	c := s3Client(s.S3)
	ctx := t.Context()
	put := func(key string, data []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	put("2026/notes.txt", []byte("notes from the holiday"))
	for i := range 16 {
		put(fmt.Sprintf("load/obj-%02d", i), patternBytes(1<<20, uint64(i)))
	}

	// Upload with progress, into the bucket's top level.
	p.run(chromedp.Click(chromedp.CSS(`#buckets tr[data-bucket="photos"] a`)), chromedp.WaitVisible(chromedp.CSS("#view-objects")))
	p.waitJS(10*time.Second, "the prefix 2026/ listed", `!!document.querySelector('#objects tr[data-prefix="2026/"]')`)
	path, sum := writeFile(t, t.TempDir(), "holiday.bin", 3<<20+12345, 7)
	p.run(chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), []string{path}), chromedp.Click(chromedp.CSS("#upload-btn")))
	p.waitJS(time.Minute, "the upload to finish", `document.getElementById("upload-status").textContent === "uploaded holiday.bin"`)
	var progress int
	p.eval(`document.getElementById("upload-progress").value`, &progress)
	if progress != 100 {
		t.Fatalf("the upload's progress bar ends at %d", progress)
	}
	p.waitJS(10*time.Second, "the uploaded file listed", `!!document.querySelector('#objects tr[data-key="holiday.bin"]')`)

	// Download through the page's link: the same bytes.
	var got struct {
		Hex string `json:"hex"`
		N   int64  `json:"n"`
		CD  string `json:"cd"`
	}
	p.eval(`(async () => {
		const a = document.querySelector('#objects tr[data-key="holiday.bin"] a.download');
		const r = await fetch(a.href);
		const b = await r.arrayBuffer();
		const d = new Uint8Array(await crypto.subtle.digest("SHA-256", b));
		return {hex: Array.from(d).map(x => x.toString(16).padStart(2, "0")).join(""), n: b.byteLength,
			cd: r.headers.get("Content-Disposition")};
	})()`, &got)
	if got.Hex != hex.EncodeToString(sum[:]) || got.N != 3<<20+12345 || !strings.Contains(got.CD, "attachment") {
		t.Fatalf("download: %d bytes, sha256 %s, Content-Disposition %q; want %d bytes, %x", got.N, got.Hex, got.CD, 3<<20+12345, sum)
	}

	// Browse into the prefix and back.
	p.run(chromedp.Click(chromedp.CSS(`#objects tr[data-prefix="2026/"] a`)))
	p.waitJS(10*time.Second, "2026/notes.txt listed", `!!document.querySelector('#objects tr[data-key="2026/notes.txt"]')`)
	p.run(chromedp.Click(chromedp.CSS(`#obj-path a`)))
	p.waitJS(10*time.Second, "the top level again", `!!document.querySelector('#objects tr[data-key="holiday.bin"]')`)

	// The manifest view shows what cairn stat says: each shard's disk and CRC.
	p.run(chromedp.Click(chromedp.CSS(`#objects tr[data-key="holiday.bin"] button.manifest`)),
		chromedp.WaitVisible(chromedp.CSS("#view-manifest")))
	p.waitJS(10*time.Second, "the manifest's 6 shards", `document.querySelectorAll("#manifest-layouts table.shards tbody tr").length === 6`)
	var m cairn.Manifest
	if err := json.Unmarshal([]byte(s.CLI(t, "stat", "--json", "photos/holiday.bin")), &m); err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	p.eval(`Array.from(document.querySelectorAll("#manifest-layouts table.shards tbody tr")).map(tr => Array.from(tr.children).map(td => td.textContent))`, &rows)
	if len(rows) != len(m.Shards) {
		t.Fatalf("the page shows %d shards, cairn stat %d", len(rows), len(m.Shards))
	}
	for i, sh := range m.Shards {
		want := []string{strconv.Itoa(i), string(sh.Disk), strconv.FormatInt(sh.Size, 10), fmt.Sprintf("%08x", sh.CRC)}
		if fmt.Sprint(rows[i][:4]) != fmt.Sprint(want) {
			t.Fatalf("shard %d shows as %q, cairn stat says %q", i, rows[i][:4], want)
		}
	}
	if summary := p.text("#manifest-summary"); !strings.Contains(summary, "rs-4-2") || !strings.Contains(summary, m.Version) {
		t.Fatalf("manifest summary %q lacks the policy or the version %s", summary, m.Version)
	}
	p.screenshot("manifest.png")

	p.run(chromedp.Click(chromedp.CSS("#nav-cluster")), chromedp.WaitVisible(chromedp.CSS("#view-cluster")))
	p.waitJS(10*time.Second, "the cluster view", `document.querySelectorAll('#disks tbody tr').length === 8`)
	if testing.Short() {
		p.screenshot("cluster.png")
		t.Log("-short: not watching a repair (it waits for the node's 30 s disk check)")
		return
	}

	// Lose the disk of the manifest's first shard and watch the repair.
	lost := m.Shards[0].Disk
	if err := os.RemoveAll(filepath.Join(s.Data, filepath.Base(string(lost)))); err != nil {
		t.Fatal(err)
	}
	diskState := fmt.Sprintf(`(document.querySelector('#disks tr[data-disk=%q] td.state') || {textContent: ""}).textContent`, lost)
	p.waitJS(2*time.Minute, string(lost)+" down in the cluster view", diskState+` === "down"`)
	maxQueued, shot := 0, false
	deadline := time.Now().Add(4 * time.Minute)
	for {
		var st string
		var queued int
		p.eval(diskState, &st)
		if q, err := strconv.Atoi(p.text("#queued")); err == nil {
			queued = q
		}
		maxQueued = max(maxQueued, queued)
		if queued > 0 && !shot {
			p.screenshot("cluster.png") // mid-repair: the disk down, the queue on its graph
			shot = true
		}
		if maxQueued > 0 && queued == 0 && st == "up" {
			break
		}
		if time.Now().After(deadline) {
			p.screenshot("cluster-timeout.png")
			t.Fatalf("after 4 minutes: %s is %q, the queue at %d (at most %d seen)", lost, st, queued, maxQueued)
		}
		// real time: the director and the node repair at their own pace; polled.
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the cluster view showed %s down, the repair queue at up to %d stripes, then drained and the disk up", lost, maxQueued)
	p.screenshot("cluster-repaired.png")
	// The object reads back after the repair, through the page.
	p.eval(`(async () => {
		const r = await fetch("/api/object?bucket=photos&key=holiday.bin");
		const d = new Uint8Array(await crypto.subtle.digest("SHA-256", await r.arrayBuffer()));
		return {hex: Array.from(d).map(x => x.toString(16).padStart(2, "0")).join(""), n: 0, cd: ""};
	})()`, &got)
	if got.Hex != hex.EncodeToString(sum[:]) {
		t.Fatal("after the repair the download differs")
	}
}

// probeExceptions throws an exception in the page and checks that the
// listener saw it, so that a page without exceptions means something.
func (p *page) probeExceptions() {
	p.t.Helper()
	var n int
	p.eval(`setTimeout(() => { throw new Error("cairn-probe") }, 0), 1`, &n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		i := slices.IndexFunc(p.exceptions, func(e string) bool { return strings.Contains(e, "cairn-probe") })
		if i >= 0 {
			p.exceptions = slices.Delete(p.exceptions, i, i+1)
		}
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatal("the page's exception listener saw no exception thrown to probe it")
		}
		// real time: the browser reports the exception asynchronously; polled.
		time.Sleep(50 * time.Millisecond)
	}
}

// visible reports whether the element matching sel is shown.
func (p *page) visible(sel string) bool {
	p.t.Helper()
	var v bool
	p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !e.hidden; })()`, sel), &v)
	return v
}
