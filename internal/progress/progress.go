package progress

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Unit is what a Bar counts.
type Unit int

const (
	// Bytes: sizes, a byte rate and the ETA.
	Bytes Unit = iota
	// Steps: done/total and the ETA.
	Steps
)

// redraw is the least time between two drawings of a bar.
const redraw = 100 * time.Millisecond

// width is the bar's width in cells, without the text around it.
const width = 30

// Bar is a progress bar; a nil or zero Bar (and a Bar New made for a
// writer that is not a terminal) draws nothing.
type Bar struct {
	b *progressbar.ProgressBar // nil: silent
}

// IsTerminal reports whether w is a terminal (a character device that
// answers the terminal ioctls).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a bar of total units (-1: unknown) labelled what, drawn on
// w if w is a terminal, else silent.
func New(w io.Writer, what string, total int64, unit Unit) *Bar {
	if !IsTerminal(w) {
		return &Bar{}
	}
	return NewTo(w, what, total, unit)
}

// NewTo returns a bar of total units (-1: unknown) labelled what, drawn on
// w whatever w is.
func NewTo(w io.Writer, what string, total int64, unit Unit) *Bar {
	if total == 0 {
		total = -1 // the library refuses a zero maximum; nothing to wait for either
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWidth(width),
		progressbar.OptionThrottle(redraw),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
		// The spinner turns as the bar is drawn: no goroutine of its own.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if unit == Bytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true))
	}
	b := progressbar.NewOptions64(total, opts...)
	_ = b.Add64(0) // the clock of the rate and the ETA starts now, not at the first unit done
	return &Bar{b: b}
}

// Set sets the units done to n.
func (b *Bar) Set(n int64) {
	if b != nil && b.b != nil {
		_ = b.b.Set64(n) // errors: only past the total, which the bar then shows as full
	}
}

// Add adds n units done.
func (b *Bar) Add(n int64) {
	if b != nil && b.b != nil {
		_ = b.b.Add64(n)
	}
}

// Clear erases the bar from its line, for other output; the next Set or
// Add draws it again.
func (b *Bar) Clear() {
	if b != nil && b.b != nil {
		_ = b.b.Clear()
	}
}

// SetTotal sets the units to do to n, for work whose size is learnt
// once it starts.
func (b *Bar) SetTotal(n int64) {
	if b != nil && b.b != nil && n > 0 && n != b.b.GetMax64() {
		b.b.ChangeMax64(n)
	}
}

// Describe changes what the bar says it is doing.
func (b *Bar) Describe(what string) {
	if b != nil && b.b != nil {
		b.b.Describe(what)
	}
}

// Done erases the bar and stops drawing it; the bar is silent from then
// on, and Done again does nothing.
func (b *Bar) Done() {
	if b != nil && b.b != nil {
		_ = b.b.Exit()
		_ = b.b.Clear()
		b.b = nil
	}
}
