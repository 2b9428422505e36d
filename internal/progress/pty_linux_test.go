package progress

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the controller (what a terminal
// emulator reads) and the terminal a program writes to.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ctl, tty
}

func itoa(n uint32) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// On a terminal New draws: the isatty check is the one a user's stderr
// meets.
func TestDrawsOnTerminal(t *testing.T) {
	ctl, tty := openPTY(t)
	if !IsTerminal(tty) {
		t.Fatal("a pseudo-terminal is not a terminal to IsTerminal")
	}
	b := New(tty, "get photos/cat.jpg", 1000, Bytes)
	b.Set(500)
	b.Done()
	tty.Close()
	// The controller reads what the terminal got, until the closed
	// terminal's end (EIO); bounded by a deadline.
	got := make(chan string, 1)
	go func() {
		var out strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := ctl.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				got <- out.String()
				return
			}
		}
	}()
	select {
	case out := <-got:
		if !strings.Contains(out, "get photos/cat.jpg") || !strings.Contains(out, "0%") {
			t.Errorf("the terminal got %q", out)
		}
	case <-time.After(time.Minute):
		t.Fatal("reading the pseudo-terminal did not end in a minute")
	}
}
