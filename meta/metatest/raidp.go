package metatest

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"cairn"
	"cairn/meta"
)

// testRAIDP: RAIDP records read back what was written, names are checked,
// f's error aborts, and concurrent updates of one record are serialized
// (no increment is lost).
func testRAIDP(t *testing.T, s meta.Store) {
	ctx := t.Context()
	if _, err := s.RAIDP(ctx, "groups/g1"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("absent record: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", "groups/", "/g", "a/../b", "a b", "groups/g\x00"} {
		if _, err := s.RAIDP(ctx, bad); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("RAIDP(%q): %v, want ErrInvalid", bad, err)
		}
		if err := s.UpdateRAIDP(ctx, bad, func([]byte) ([]byte, error) { return []byte("1"), nil }); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("UpdateRAIDP(%q): %v, want ErrInvalid", bad, err)
		}
	}
	noErr(t, "create", s.UpdateRAIDP(ctx, "groups/g1", func(old []byte) ([]byte, error) {
		if old != nil {
			t.Errorf("create saw %q", old)
		}
		return []byte(`{"generation":1}`), nil
	}))
	got, err := s.RAIDP(ctx, "groups/g1")
	noErr(t, "read", err)
	if string(got) != `{"generation":1}` {
		t.Errorf("read %q", got)
	}
	stop := errors.New("stop")
	if err := s.UpdateRAIDP(ctx, "groups/g1", func([]byte) ([]byte, error) { return nil, stop }); !errors.Is(err, stop) {
		t.Errorf("an aborted update: %v", err)
	}
	if err := s.UpdateRAIDP(ctx, "groups/g1", func([]byte) ([]byte, error) { return []byte("{"), nil }); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a value that is not JSON: %v, want ErrInvalid", err)
	}
	var wg sync.WaitGroup
	const n = 8
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.UpdateRAIDP(ctx, "alloc/g1", func(old []byte) ([]byte, error) {
				v := 0
				if old != nil {
					var err error
					if v, err = strconv.Atoi(string(old)); err != nil {
						return nil, err
					}
				}
				return []byte(strconv.Itoa(v + 1)), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err = s.RAIDP(ctx, "alloc/g1")
	noErr(t, "read counter", err)
	if string(got) != strconv.Itoa(n) {
		t.Errorf("%d concurrent increments left %s", n, got)
	}
}
