// Package lstor is one disk's RAIDP storage on a node: the disk's
// superchunk slots (DISK/raidp.data) and its Lstor (LSTOR/LSTOR, on its own
// path), which holds the XOR of the slots and a journal that keeps data and
// parity consistent across crashes. docs/design/raidp.md is the
// specification; format.go holds the layout as documentation-only structs.
// The layout of superchunks over disks and the recovery plans are the pure
// core, package raidp.
//
// Terms:
//
//   - slot: a superchunk-sized region of the disk, slot s at s·Size.
//   - parity: byte o of the Lstor is the XOR of byte o of every slot, kept
//     in 64 KiB blocks (BlockSize), each with a CRC-32C.
//   - record: one journal entry (new data, old data, new parity of one
//     read-modify-write of at most Cap bytes) with a CRC. The journal holds
//     one record at a time: writes are serialized (the paper's writer lock).
//   - high-water mark: per slot, the offset past which the disk is zero; a
//     write there skips the old-data read (the zero-region shortcut).
//   - delete: DeleteLazy queues dead ranges for Idle (bounded backlog),
//     DeleteOnline zeroes them at once; both zero data and parity.
//   - replay: at Open, a complete record is redone (data, parity, clear; all
//     idempotent).
//   - marked for verification: a VERIFY file on the Lstor says the parity
//     may not match the disk — a record failed its CRC (it is never
//     replayed), a write failed half-way, or the disk is new beside an old
//     Lstor. Writes fail with ErrNeedsVerify until Resync recomputes the
//     parity from the disk.
//
// Invariants (crash-tested by cloning the mem vfs before every write and
// sync, keeping none, some or all unsynced data, and by 150 random kills):
//
//   - after Open, every parity block is the XOR of the slots (Verify);
//   - a Write that returned nil is durable on the disk and in the parity;
//   - a Write in progress at a crash leaves each of its records all old or
//     all new, in order;
//   - a record that fails its CRC is never replayed.
//
// Usage sketch:
//
//	s, err := lstor.Open(ctx, lstor.Config{Disk: "/data/disk1", Lstor: "/data/lstor/disk1",
//		Size: 1 << 30, Slots: 15})
//	err = s.Write(ctx, slot, off, p) // durable, parity updated, when nil
//	rep, err := s.Verify(ctx)        // rep.OK(): parity = XOR of the slots
//
// Caveats: the files must support vfs.WriterAt (the OS and the mem vfs do,
// vfs.Throttle passes it on; errorfs does not). Every write below the
// high-water mark reads the old data; every record syncs the Lstor four
// times and the disk once. Only k = 1 (XOR) parity. The node serves a
// disk's Store over the RAIDP calls (node/raidp.go), which write a body
// block by block as it arrives (wire.HeaderBlockCRCs): one Write per block.
package lstor
