package progress

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Off a terminal a bar is silent: a buffer, a pipe or a file gets nothing.
func TestSilentOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var buf bytes.Buffer
	for _, out := range []struct {
		name string
		w    io.Writer
	}{{"buffer", &buf}, {"file", f}, {"pipe", w}} {
		if IsTerminal(out.w) {
			t.Errorf("%s: IsTerminal", out.name)
		}
		b := New(out.w, "put x", 100, Bytes)
		b.Set(50)
		b.Add(50)
		b.Clear()
		b.Done()
		s := New(out.w, "bench", -1, Steps)
		s.Add(1)
		s.Done()
	}
	var none *Bar // a nil Bar is silent too
	none.SetTotal(3)
	none.Add(1)
	none.Describe("x")
	none.Done()
	if buf.Len() != 0 {
		t.Errorf("a buffer got %q", buf.String())
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("a file got %d bytes", st.Size())
	}
	w.Close()
	got := make([]byte, 1)
	if n, _ := r.Read(got); n != 0 {
		t.Errorf("a pipe got %q", got[:n])
	}
}

// last returns the last drawing of a bar on out: the text after the last
// carriage return that is not blank.
func last(out string) string {
	parts := strings.Split(out, "\r")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.TrimSpace(parts[i]) != "" {
			return parts[i]
		}
	}
	return ""
}

// A bytes bar shows what, the percentage, done/total, the rate and
// [elapsed:ETA]; Done erases it.
func TestBytesBar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		b := NewTo(&buf, "put photos/cat.jpg", 8<<20, Bytes)
		for range 4 {
			time.Sleep(time.Second)
			b.Add(1 << 20) // 1 MiB/s
		}
		got := last(buf.String())
		for _, want := range []string{"put photos/cat.jpg", "50%", "4.0/8.0 MiB", "1.0 MiB/s", "[4s:4s]"} {
			if !strings.Contains(got, want) {
				t.Errorf("the bar %q does not show %q", got, want)
			}
		}
		buf.Reset()
		b.Done()
		if strings.TrimSpace(buf.String()) != "" || !strings.HasPrefix(buf.String(), "\r") {
			t.Errorf("Done drew %q, want the line blanked", buf.String())
		}
		buf.Reset()
		b.Add(1 << 20)
		b.Describe("again")
		b.Done()
		if buf.Len() != 0 {
			t.Errorf("the bar drew %q after Done", buf.String())
		}
	})
}

// A steps bar counts n/total with an ETA; an unknown total spins with the
// count and no ETA.
func TestStepsBar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		b := NewTo(&buf, "bench codec", 10, Steps)
		for i := range 3 {
			if i == 2 {
				b.Describe("bench codec rs-4-2 encode") // drawn with the next count
			}
			time.Sleep(2 * time.Second)
			b.Add(1)
		}
		got := last(buf.String())
		for _, want := range []string{"bench codec rs-4-2 encode", "30%", "3/10", "[6s:14s]"} {
			if !strings.Contains(got, want) {
				t.Errorf("the bar %q does not show %q", got, want)
			}
		}
		b.Done()

		buf.Reset()
		u := NewTo(&buf, "put -", -1, Bytes)
		time.Sleep(time.Second)
		u.Set(3 << 20)
		got = last(buf.String())
		if !strings.Contains(got, "put -") || !strings.Contains(got, "3.0 MiB") || strings.Contains(got, ":") {
			t.Errorf("the bar of an unknown total is %q", got)
		}
		u.Done()

		// A total learnt once the work starts.
		buf.Reset()
		l := NewTo(&buf, "bench push", -1, Steps)
		l.SetTotal(4)
		time.Sleep(time.Second)
		l.Set(1)
		if got := last(buf.String()); !strings.Contains(got, "25%") || !strings.Contains(got, "1/4") || !strings.Contains(got, "[1s:3s]") {
			t.Errorf("the bar with its total set later is %q", got)
		}
		l.Done()
	})
}
