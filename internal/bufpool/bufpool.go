package bufpool

import "sync"

// Pool keeps buffers for reuse by capacity. The zero value is ready; a
// Pool is safe for concurrent use and must not be copied after first use.
type Pool struct {
	pools sync.Map // capacity → *sync.Pool of *[]byte
}

// Get returns a buffer of length n and capacity c (c < n counts as n):
// one that was Put with capacity c, or a new one. Its bytes are not
// zeroed.
func (p *Pool) Get(n, c int) *[]byte {
	c = max(c, n)
	if pl, ok := p.pools.Load(c); ok {
		if b, ok := pl.(*sync.Pool).Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
	}
	b := make([]byte, n, c)
	return &b
}

// Put makes *b available to Get of its capacity. The caller must not use
// *b (or b) afterwards.
func (p *Pool) Put(b *[]byte) {
	pl, ok := p.pools.Load(cap(*b))
	if !ok {
		pl, _ = p.pools.LoadOrStore(cap(*b), new(sync.Pool))
	}
	pl.(*sync.Pool).Put(b)
}
