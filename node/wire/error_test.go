package wire

import (
	"errors"
	"testing"

	"cairn"
)

func TestErrorTableRoundTrip(t *testing.T) {
	for _, e := range errorTable {
		code, status := EncodeError(errors.Join(errors.New("x"), e.err))
		if got := DecodeError(code, status); got != e.err {
			t.Errorf("%v → %s %d → %v", e.err, code, status, got)
		}
	}
	if code, status := EncodeError(errors.New("disk on fire")); code != CodeInternal || status != 500 {
		t.Errorf("unknown error → %s %d", code, status)
	}
	if got := DecodeError("internal", 500); got != cairn.ErrUnavailable {
		t.Errorf("internal → %v", got)
	}
	for code, want := range codeAliases {
		if got := DecodeError(code, 404); got != want {
			t.Errorf("%s → %v", code, got)
		}
	}
	if got := DecodeError("brand-new-code", 404); got != cairn.ErrNotFound {
		t.Errorf("unknown code, 404 → %v", got)
	}
}
