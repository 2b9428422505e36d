// Package testcluster starts real cairn clusters for tests and benchmarks:
// the cairn binary (built once per test binary) runs as separate processes
// — metadata members (`cairn meta`) and storage nodes (`cairn node`), or
// the all-in-one `cairn server` — on free loopback ports with their own data
// directories. Faults are real: processes are killed with SIGKILL and
// restarted, disk directories are removed, bytes are flipped in shard files.
//
// Usage:
//
//	c := testcluster.Start(t, testcluster.Config{Metas: 3, Nodes: 6})
//	c.CLI(t, "mb", "photos")
//	c.KillNode(t, 2)
//
// Caveats: processes die with the test (t.Cleanup); a test that panics can
// leave them behind until the machine's next clean-up.
package testcluster
