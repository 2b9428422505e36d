package torture

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// Version is one content a key may hold (see the package doc); the zero
// Version is Absent.
type Version struct {
	Seed uint64 // the bytes are Content(Seed, Size); 0: no object
	Size int64
	Sum  [sha256.Size]byte
}

// Absent is the version of a key that holds no object.
var Absent = Version{}

// NewVersion returns the version of size bytes drawn from seed (a zero
// seed is replaced: zero means Absent).
func NewVersion(seed uint64, size int64) Version {
	seed |= 1 << 63
	return Version{Seed: seed, Size: size, Sum: sha256.Sum256(Content(seed, size))}
}

// Content returns the bytes of the version of seed and size.
func Content(seed uint64, size int64) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	b := make([]byte, size)
	rand.NewChaCha8(s).Read(b)
	return b
}

// Observed is the version a read found: sum and size of its bytes, or
// Absent for "no such key".
func Observed(b []byte) Version {
	return Version{Seed: 1, Size: int64(len(b)), Sum: sha256.Sum256(b)}
}

// same says whether a and b are the same content (seeds aside: an
// observed version has none).
func (v Version) same(o Version) bool {
	return (v.Seed == 0) == (o.Seed == 0) && v.Size == o.Size && v.Sum == o.Sum
}

func (v Version) String() string {
	if v.Seed == 0 {
		return "absent"
	}
	return fmt.Sprintf("%d bytes %x", v.Size, v.Sum[:4])
}

// Key is what one key may hold. Its fields belong to whoever holds the key
// (Model.Acquire until Model.Release, or the checker while no worker
// runs), so they need no lock.
type Key struct {
	Name     string
	possible []Version // never empty
	history  []string  // the last operations, for failure messages
	// frozen is the gateway epoch in which an operation on the key got
	// no answer (it may still take effect), or -1. Written by the holder;
	// Acquire reads it (under Model.mu) only of keys no one holds, after
	// the Release that publishes it.
	frozen int64
	busy   bool // guarded by Model.mu
}

// maxHistory bounds Key.history.
const maxHistory = 12

func (k *Key) note(format string, args ...any) {
	k.history = append(k.history, fmt.Sprintf(format, args...))
	if len(k.history) > maxHistory {
		k.history = slices.Delete(k.history, 0, len(k.history)-maxHistory)
	}
}

// Possible returns the versions a read of k may return.
func (k *Key) Possible() []Version { return slices.Clone(k.possible) }

// History describes the last operations on k.
func (k *Key) History() string { return strings.Join(k.history, "; ") }

// Ack records that what (e.g. "r3 put") was acknowledged: k holds v.
func (k *Key) Ack(v Version, what string) {
	k.possible = []Version{v}
	k.note("%s %v: acknowledged", what, v)
}

// Doubt records that what, which would leave v in k, is in doubt (why:
// its error): k holds v or what it held before.
func (k *Key) Doubt(v Version, what, why string) {
	if !slices.ContainsFunc(k.possible, v.same) {
		k.possible = append(k.possible, v)
	}
	k.note("%s %v: in doubt (%s)", what, v, why)
}

// Freeze records that an operation of gateway epoch epoch got no answer
// from a gateway that may still run it.
func (k *Key) Freeze(epoch int64) { k.frozen = epoch }

// Frozen says whether k waits for the gateway of epoch epoch to die.
func (k *Key) Frozen(epoch int64) bool { return k.frozen == epoch }

// Observe checks a read of k that found v: it must be one of the possible
// versions, and, if narrow is set (the read is settled and no operation
// on k is under way), k holds v from now on. The error says what was
// possible and what happened to k.
func (k *Key) Observe(v Version, what string, narrow bool) error {
	if !slices.ContainsFunc(k.possible, v.same) {
		return fmt.Errorf("%s: %s found %v; possible: %v; history: %s", k.Name, what, v, k.possible, k.History())
	}
	if narrow && len(k.possible) > 1 {
		for _, p := range k.possible {
			if p.same(v) {
				v = p
			}
		}
		k.possible = []Version{v}
		k.note("%s found %v", what, v)
	}
	return nil
}

// Model is the possible set of every key of the workload.
type Model struct {
	keys []*Key
	mu   sync.Mutex // guards Key.busy of every key
}

// NewModel returns a model of n keys named prefix000, prefix001, ...,
// each Absent.
func NewModel(prefix string, n int) *Model {
	m := &Model{}
	for i := range n {
		m.keys = append(m.keys, &Key{Name: fmt.Sprintf("%s%03d", prefix, i), possible: []Version{Absent}, frozen: -1})
	}
	return m
}

// Keys returns every key (for the checker, while no worker runs).
func (m *Model) Keys() []*Key { return m.keys }

// Acquire returns a random key that no one holds and that is not frozen
// in epoch, now held by the caller; nil if there is none.
func (m *Model) Acquire(rng *rand.Rand, epoch int64) *Key {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := rng.IntN(len(m.keys))
	for i := range m.keys {
		k := m.keys[(start+i)%len(m.keys)]
		if !k.busy && !k.Frozen(epoch) {
			k.busy = true
			return k
		}
	}
	return nil
}

// Release gives k back.
func (m *Model) Release(k *Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k.busy = false
}

// AnyFrozen says whether a key waits for the gateway of epoch to die
// (while no worker runs).
func (m *Model) AnyFrozen(epoch int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.keys, func(k *Key) bool { return k.Frozen(epoch) })
}
