// Package linkshape gives a process a slow network link, for experiments
// (the repair experiments' nodes behind 1 Gbit/s NICs): what internal/vfs's
// Throttle is to a disk, this is to a network link.
//
// Terms:
//
//   - token bucket: up to a burst of bytes, refilled at the rate. A take
//     larger than what is there puts the bucket in debt and says how long
//     to wait; later takers wait behind the debt, so concurrent callers are
//     served in order at the rate. Pure: the time is an argument.
//   - Limiter: one direction of a link — a token bucket behind a mutex,
//     and a Clock to wait on. Every byte that direction carries is charged
//     to it, over all connections together.
//   - Link: a pair of Limiters (receive, send). Its Listener and Client
//     shape every connection a server accepts and every connection its
//     HTTP client dials, so a node limited to R bytes/s receives at most
//     about R bytes/s in total, however many transfers run at once — as a
//     node behind an R-bytes/s NIC.
//   - chunk: reads and writes are cut into Chunk bytes, each charged before
//     it is written or after it is read; the bucket holds Burst (at least
//     50 ms at the rate), so short exchanges are not delayed while
//     transfers run at the rate.
//
// Usage sketch:
//
//	link := linkshape.New(125_000_000, linkshape.WallClock{}) // 1 Gbit/s
//	ln = link.Listener(ln)
//	hc = link.Client(hc)
//
// Caveats: shaping is per process, not per peer; a receiver slows its peer
// only through TCP flow control (the bytes are read, then paid for). A
// Client whose transport dials TLS with a DialTLSContext of its own is not
// shaped.
package linkshape
