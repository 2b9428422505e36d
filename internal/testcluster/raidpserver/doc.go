// Package raidpserver runs the raidp policy (the warm tier,
// docs/design/raidp.md) end to end on real processes: objects of storage
// class WARM through the S3 gateway, a node killed and the mirrors serving
// reads, lazy zeroing of dead ranges and compaction with `cairn server`
// killed mid-way, and a recovery killed and resumed from its stored plan;
// `cairn admin raidp verify` checks every disk's Lstor at the end. It
// holds tests only, in a package of its own so that `go test ./...` runs
// them in parallel with internal/testcluster's (a single package of every
// end-to-end test neared its 45-minute timeout).
//
// Vocabulary: see internal/testcluster (servers, clusters, Poll) and
// internal/testcluster/raidpcrash (the crash iterations of the data path).
package raidpserver
