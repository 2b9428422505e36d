// Package patcache is the bounded cache codes keep of the work they plan
// once per erasure pattern (decode matrices, repair schedules, XOR plans):
// keyed by the pattern's index lists, built outside the lock, emptied when
// full (patterns are few in practice: one per failure pattern of a stripe).
package patcache

import (
	"strconv"
	"strings"
	"sync"
)

// Cache maps pattern keys to planned values. Safe for concurrent use;
// values are shared and must not be modified by callers.
type Cache[V any] struct {
	max int
	mu  sync.Mutex
	m   map[string]V // guarded by mu
}

// New returns a cache of at most max entries.
func New[V any](max int) *Cache[V] {
	return &Cache[V]{max: max, m: make(map[string]V)}
}

// Key encodes index lists as a key: "1,2,|3,".
func Key(lists ...[]int) string {
	var b strings.Builder
	for j, l := range lists {
		if j > 0 {
			b.WriteByte('|')
		}
		for _, i := range l {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(',')
		}
	}
	return b.String()
}

// Get returns the value for key, building it (outside the lock; two
// callers may both build, one result is kept) if it is not cached. A build
// error is returned and nothing is cached.
func (c *Cache[V]) Get(key string, build func() (V, error)) (V, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v, nil
}
