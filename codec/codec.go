package codec

import (
	"errors"
	"fmt"
)

// Params describes the shape of a code's stripe.
type Params struct {
	// K is the number of data shards.
	K int
	// M is the number of parity shards; K+M shards form a stripe.
	M int
	// Alpha is the sub-packetization: the number of sub-chunks a shard is
	// divided into by the code. Scalar codes (RS, LRC, replication) have 1.
	Alpha int
	// ShardMultiple is what every shard length must be a multiple of
	// (Alpha for array codes, 1 for scalar codes).
	ShardMultiple int
}

// N returns the stripe width K+M.
func (p Params) N() int { return p.K + p.M }

// Code is a systematic linear erasure code over GF(2^8).
//
// A stripe is a slice of K+M shards: data shards at indices 0..K-1 and
// parity shards at K..K+M-1. All present shards of a stripe have the same
// length, a positive multiple of Params().ShardMultiple. A shard is missing
// when its slice has length 0; a missing shard with enough capacity is
// reused as the output buffer when it is rebuilt, otherwise a new buffer is
// allocated.
//
// Implementations are safe for concurrent use by multiple goroutines, do no
// I/O and start no goroutines: each call runs on the caller's goroutine, and
// callers that want parallelism run stripes in parallel.
type Code interface {
	// Params returns the stripe shape.
	Params() Params

	// Policy returns the policy string that builds this code, e.g. "rs-10-4".
	Policy() Policy

	// Encode computes all parity shards from the data shards. Data shards
	// must be present; parity shards must have the data shards' length (they
	// are overwritten) or be missing (they are allocated or re-sliced from
	// capacity). It returns ErrShardSize or ErrShardCount for a malformed
	// stripe.
	Encode(shards [][]byte) error

	// Reconstruct rebuilds missing shards from the present ones. want lists
	// the shard indices to rebuild; nil means every missing shard. Present
	// shards are never modified and wanted shards that are present are left
	// alone. Shards neither present nor wanted stay missing.
	//
	// It returns an error wrapping ErrUndecodable (an *UndecodableError) when
	// the present shards do not determine the wanted ones, and ErrShardSize,
	// ErrShardCount or ErrShardIndex for a malformed call. On error no
	// present shard has been modified.
	Reconstruct(shards [][]byte, want []int) error

	// Verify reports whether the parity shards are consistent with the data
	// shards. Every shard must be present.
	Verify(shards [][]byte) (bool, error)

	// CanReconstruct reports whether the shards marked present determine every
	// shard of the stripe. It is cheap and touches no payload, so a reader
	// can decide when it has heard from enough disks. len(present) must be
	// K+M; otherwise it reports false.
	CanReconstruct(present []bool) bool
}

// Errors returned by codes. Each is wrapped with context; test with
// errors.Is.
var (
	// ErrInvalidParams: the code's parameters are out of range (see the
	// message for which one).
	ErrInvalidParams = errors.New("codec: invalid parameters")
	// ErrShardCount: the stripe does not have exactly K+M shards.
	ErrShardCount = errors.New("codec: wrong number of shards")
	// ErrShardSize: present shards differ in length, or a length is not a
	// positive multiple of the code's ShardMultiple.
	ErrShardSize = errors.New("codec: bad shard size")
	// ErrShardIndex: a shard index (in want, or lost/helper lists) is out of
	// range or repeated.
	ErrShardIndex = errors.New("codec: bad shard index")
	// ErrUndecodable: the available shards do not determine the wanted ones.
	ErrUndecodable = errors.New("codec: not enough shards to decode")
)

// UndecodableError says which shards were wanted and which were available
// when a decode or repair plan was impossible.
type UndecodableError struct {
	Op        string // "reconstruct" or "repair"
	Want      []int  // shards that were asked for
	Available []int  // shards that were present
}

func (e *UndecodableError) Error() string {
	return fmt.Sprintf("codec: %s: shards %v cannot be computed from shards %v", e.Op, e.Want, e.Available)
}

// Unwrap makes errors.Is(err, ErrUndecodable) true.
func (e *UndecodableError) Unwrap() error { return ErrUndecodable }

// LinearRepairer is the optional capability of scalar linear codes (Alpha 1):
// every byte of a lost shard is a fixed GF(2^8) linear combination of the same
// byte of some other shards. It is what a PUSH chain hop applies.
type LinearRepairer interface {
	// RepairPlan returns the helpers and coefficients that rebuild the lost
	// shards from shards in available. available is in order of preference:
	// earlier shards are chosen first where the code has a choice. The plan
	// uses as few helpers as the code knows how to (an LRC uses the local
	// group). Plans are cached per pattern and shared: callers must not
	// modify the returned plan. It returns an *UndecodableError when the
	// available shards do not determine the lost ones.
	RepairPlan(lost, available []int) (*RepairPlan, error)
}

// Extensible is the optional capability of codes whose parity is
// prefix-stable (docs/codes.md#prefix-stable-parity): more parity rows than
// N can be made, one at a time and on demand, and any K rows of the extended
// code decode. A
// writer uses it to replace a straggling shard by a spare parity row; a
// reader decodes a stripe holding such rows with the extended code.
type Extensible interface {
	// MaxRows returns how many rows the code can be extended to: rows
	// 0..MaxRows()−1 exist, the first N being the code's own shards.
	MaxRows() int
	// MakeRow writes row r (0 ≤ r < MaxRows) of the stripe whose K data
	// shards are data into dst, which must have their length. Row r is
	// byte-identical to shard r of every extension with more than r rows.
	// Errors: ErrShardIndex, ErrShardCount, ErrShardSize.
	MakeRow(r int, data [][]byte, dst []byte) error
	// ExtendTo returns the code with rows shards (N ≤ rows ≤ MaxRows):
	// its first N shards are this code's, byte for byte. ErrInvalidParams
	// otherwise.
	ExtendTo(rows int) (Code, error)
}

// LocalGroups is the optional capability of locally repairable codes.
type LocalGroups interface {
	// Groups returns the local groups. Each group lists shard indices: its
	// data shards followed by its local parity. Any one shard of a group is
	// the XOR of the others. The result must not be modified.
	Groups() [][]int
}

// Data returns the indices 0..k-1, for Reconstruct(shards, codec.Data(k)):
// rebuild only the data shards.
func Data(k int) []int {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
