// Package vfs is cairn's file-system seam (after pebble's vfs): every disk
// access of the storage node goes through an FS, so that tests can run the
// real volume code against an in-memory disk that crashes on command
// (MemFS.CrashClone) or fails chosen operations (package errorfs).
//
// Terms:
//
//   - FS: the operations the volume needs — create/open files, rename,
//     remove, list, stat, mkdir, disk usage. Default is the OS.
//   - File: sequential Write, ReadAt, Sync, Close. OpenDir returns a File
//     whose Sync makes a directory's entries durable.
//   - synced: data survives a crash only after File.Sync; a new, removed or
//     renamed name survives only after its directory is synced. MemFS
//     enforces exactly this, so a test that passes on MemFS crash clones
//     does not rely on luck.
//
// Usage sketch (a crash test):
//
//	mem := vfs.NewCrashableMem()
//	… write through mem …
//	after := mem.CrashClone(vfs.CrashCloneCfg{})  // what a power cut leaves
//	… reopen the volume on after and check what survived …
//
// Caveats: MemFS has no permissions, hard links, symlinks or Seek; Write
// always goes to the handle's position. Paths are cleaned and rooted at
// "/". The OS implementation's GetDiskUsage uses statfs and is unsupported
// outside Linux and the BSDs.
package vfs
