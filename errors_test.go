package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"cairn"
)

func TestIsPermanent(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", cairn.ErrNotFound, true},
		{"exists", cairn.ErrExists, true},
		{"bucket not empty", cairn.ErrBucketNotEmpty, true},
		{"invalid", cairn.ErrInvalid, true},
		{"corrupt", cairn.ErrCorrupt, true},
		{"no space", cairn.ErrNoSpace, true},
		{"auth", cairn.ErrAuth, true},
		{"cancelled", context.Canceled, true},
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped not found", fmt.Errorf("manifest b/k: %w", cairn.ErrNotFound), true},
		{"unavailable", cairn.ErrUnavailable, false},
		{"conflict", cairn.ErrConflict, false},
		{"wrapped conflict", fmt.Errorf("commit b/k: %w", cairn.ErrConflict), false},
		{"unavailable for want of space", fmt.Errorf("%w: disk 3: %w", cairn.ErrUnavailable, cairn.ErrNoSpace), true},
		{"unavailable because cancelled", fmt.Errorf("%w: %w", cairn.ErrUnavailable, context.Canceled), true},
		{"network", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, false},
		{"unnamed", errors.New("etcdserver: no leader"), false},
		{"joined", errors.Join(cairn.ErrUnavailable, cairn.ErrCorrupt), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cairn.IsPermanent(tt.err); got != tt.want {
				t.Fatalf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
