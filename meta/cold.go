package meta

import (
	"bytes"
	"fmt"

	"cairn"
)

// ColdRecord is one record of the cold tier's state (docs/design/cold.md,
// "Persistence"): an opaque value under a key the cold tier names. The
// store keeps the bytes; package cold gives them their meaning.
type ColdRecord struct {
	Key   string
	Value []byte
}

// ColdOp is one write of Store.ColdUpdate: Value replaces the record Key
// (nil Value: deletes it). With Check set, the update goes through only if
// the stored value is exactly Prev (nil Prev: the record must not exist) —
// a compare-and-swap; without it the write is blind.
type ColdOp struct {
	Key   string
	Value []byte
	Check bool
	Prev  []byte
}

// Limits of cold records.
const (
	// MaxColdOps is the most writes one ColdUpdate holds: etcd's default
	// limit of operations per transaction (--max-txn-ops), which bounds
	// the compares and the puts of a transaction each.
	MaxColdOps = 128
	// MaxColdValue is the largest value of a cold record.
	MaxColdValue = 64 << 10
	// MaxColdKey is the longest key of a cold record.
	MaxColdKey = 2048
)

// CheckColdKey checks a cold record's key: non-empty, at most MaxColdKey
// bytes, no NUL. The error wraps cairn.ErrInvalid.
func CheckColdKey(key string) error {
	if key == "" || len(key) > MaxColdKey || bytes.IndexByte([]byte(key), 0) >= 0 {
		return fmt.Errorf("%w: cold record key %q: empty, longer than %d bytes or with a NUL", cairn.ErrInvalid, key, MaxColdKey)
	}
	return nil
}

// CheckColdOps checks the writes of a ColdUpdate: 1..MaxColdOps of them,
// valid keys, no key twice, values at most MaxColdValue bytes. The error
// wraps cairn.ErrInvalid.
func CheckColdOps(ops []ColdOp) error {
	if len(ops) < 1 || len(ops) > MaxColdOps {
		return fmt.Errorf("%w: cold update of %d writes (want 1..%d)", cairn.ErrInvalid, len(ops), MaxColdOps)
	}
	seen := make(map[string]bool, len(ops))
	for _, o := range ops {
		if err := CheckColdKey(o.Key); err != nil {
			return err
		}
		if seen[o.Key] {
			return fmt.Errorf("%w: cold update writes %q twice", cairn.ErrInvalid, o.Key)
		}
		seen[o.Key] = true
		if len(o.Value) > MaxColdValue {
			return fmt.Errorf("%w: cold record %q of %d bytes (at most %d)", cairn.ErrInvalid, o.Key, len(o.Value), MaxColdValue)
		}
	}
	return nil
}
