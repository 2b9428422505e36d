package cli

import (
	"flag"
	"fmt"
	"time"

	"cairn/node"
)

// authFlags are a node's request-signature limits (docs/design/node-protocol.md,
// "Authentication"): the time window and the replay cache's bound.
type authFlags struct {
	skew   *time.Duration
	replay *int
}

// Bounds of the flags: a window under a second refuses honest clients
// whose clocks differ by a tick; over an hour keeps a replayable request
// alive too long. The cache takes about 77 bytes a nonce.
const (
	minAuthSkew   = time.Second
	maxAuthSkew   = time.Hour
	minReplay     = 1 << 10
	maxReplay     = 1 << 26 // about 5 GB of heap when full
	replayPerByte = 77
)

func addAuthFlags(fs *flag.FlagSet) *authFlags {
	return &authFlags{
		skew: fs.Duration("auth-skew", node.DefaultSkew, fmt.Sprintf("this node: how far a request's signing time may be from the node's clock, either way (%v to %v); "+
			"clients' clocks must agree within it, and the node remembers each request's nonce this long", minAuthSkew, maxAuthSkew)),
		replay: fs.Int("auth-replay-entries", node.DefaultReplayEntries, fmt.Sprintf("this node: most request nonces remembered within --auth-skew (%d to %d, about %d bytes each); "+
			"when full the node answers 503 rather than forget one, so it serves about ENTRIES/SKEW requests a second sustained "+
			"(%d/s with the defaults)", minReplay, maxReplay, replayPerByte, node.DefaultReplayEntries/int(node.DefaultSkew/time.Second))),
	}
}

// validate checks the flags; nil f (no flags) is valid and takes the
// defaults.
func (f *authFlags) validate() error {
	if f == nil {
		return nil
	}
	if *f.skew < minAuthSkew || *f.skew > maxAuthSkew {
		return fmt.Errorf("%w: --auth-skew %v: want %v to %v", ErrUsage, *f.skew, minAuthSkew, maxAuthSkew)
	}
	if *f.replay < minReplay || *f.replay > maxReplay {
		return fmt.Errorf("%w: --auth-replay-entries %d: want %d to %d", ErrUsage, *f.replay, minReplay, maxReplay)
	}
	return nil
}

// skewOr0 is --auth-skew, or 0 (the default) without flags.
func (f *authFlags) skewOr0() time.Duration {
	if f == nil {
		return 0
	}
	return *f.skew
}

// replayOr0 is --auth-replay-entries, or 0 (the default) without flags.
func (f *authFlags) replayOr0() int {
	if f == nil {
		return 0
	}
	return *f.replay
}
