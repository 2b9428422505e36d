package errorfs_test

import (
	"errors"
	"io/fs"
	"testing"

	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Signal fires after the first matching operation has run without error
// (its effect is visible by then), not for one its next injector failed;
// next sees every operation and, being a Log, records them.
func TestSignal(t *testing.T) {
	mem := vfs.NewMem()
	log := &errorfs.Log{}
	fail := errorfs.NewFailNth(errorfs.OnKinds(errorfs.OpRename), 0, nil)
	var sig *errorfs.Signal
	efs := errorfs.Wrap(mem, nil)
	sig = errorfs.NewSignal(errorfs.OnKinds(errorfs.OpRename), errorfs.InjectorFunc(func(op errorfs.Op) error {
		log.MaybeError(op)
		if op.Kind == errorfs.OpRename && closed(sig.C()) {
			t.Errorf("signalled before %v ran", op)
		}
		return fail.MaybeError(op)
	}))
	efs.SetInjector(sig)
	f, err := efs.Create("/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := efs.Rename("/a", "/b"); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("first rename: %v", err)
	}
	if closed(sig.C()) {
		t.Fatal("signalled for a failed rename")
	}
	if err := efs.Rename("/a", "/c"); err != nil {
		t.Fatal(err)
	}
	if !closed(sig.C()) {
		t.Fatal("no signal after a rename ran")
	}
	if _, err := mem.Stat("/c"); err != nil {
		t.Fatalf("the signalled rename's effect: %v", err)
	}
	if _, err := efs.Stat("/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of the old name: %v", err)
	}
	if n := log.Count(func(errorfs.Op) bool { return true }); n != 5 {
		t.Fatalf("next saw %d operations, want 5: %v", n, log.Ops())
	}
}

// Log is an Injector only; an Observer in the chain is told how each
// operation it let through ended.
type doneLog struct {
	errorfs.Log
	done []error
}

func (d *doneLog) Done(_ errorfs.Op, err error) { d.done = append(d.done, err) }

func TestObserverSeesErrors(t *testing.T) {
	d := &doneLog{}
	efs := errorfs.Wrap(vfs.NewMem(), errorfs.NewSignal(func(errorfs.Op) bool { return false }, d))
	if _, err := efs.Open("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(d.done) != 1 || !errors.Is(d.done[0], fs.ErrNotExist) {
		t.Fatalf("Done saw %v", d.done)
	}
}
