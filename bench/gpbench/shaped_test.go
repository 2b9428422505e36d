package gpbench

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestShapedBanksNoIdleTime checks the client link's model on a virtual
// clock: back-to-back writes go out at its rate, and bytes written after
// the link sat idle take their full time from when they were written —
// a read that starts late cannot catch up (the old model, "no faster
// than rate since start", let it, hiding a degraded read's first repair).
func TestShapedBanksNoIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mb = 1 << 20
		w := &shaped{rate: mb, start: time.Now()}
		for range 2 { // two half-megabytes back to back: 1 s
			if _, err := w.Write(make([]byte, mb/2)); err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(w.start); got != time.Second {
			t.Fatalf("1 MiB written back to back at 1 MiB/s took %v, want 1s", got)
		}
		time.Sleep(2 * time.Second) // the link idles (virtual time: the synctest bubble's clock)
		if _, err := w.Write(make([]byte, mb)); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(w.start); got != 4*time.Second {
			t.Fatalf("1 MiB written after 2 s idle ended at %v, want 4s (1 s busy, 2 s idle, 1 s busy)", got)
		}
		if w.n != 2*mb {
			t.Fatalf("counted %d bytes, want %d", w.n, 2*mb)
		}
	})
}
