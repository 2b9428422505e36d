// Package testcluster starts real cairn clusters for tests: the cairn binary
// (built once per test binary) runs as separate processes — metadata
// members (`cairn meta`) and storage nodes (`cairn node`), or the
// all-in-one `cairn server` — on loopback ports the kernel picks, with their
// own data directories. internal/proc starts them and reads their addresses
// from their ready lines. Faults are real: processes are killed with SIGKILL
// and restarted, disk directories are removed, bytes are flipped in shard
// files.
//
// Usage:
//
//	c := testcluster.Start(t, testcluster.Config{Metas: 3, Nodes: 6})
//	c.CLI(t, "mb", "photos")
//	c.Nodes[1].Kill()
//
// Caveats: processes die with the test (t.Cleanup), and on Linux with the
// test binary; a restarted process listens on new ports.
package testcluster
