// Package volume is cairn's on-disk format for one disk: a directory of
// shard files with a CRC-32C per 64 KiB block, written crash-safely, read
// by range, listed, and checked by fsck. docs/design/volume.md is the
// specification; format.go holds the same layout as documentation-only
// structs.
//
// Terms:
//
//   - volume: one disk directory, identified by the disk ID in its
//     CAIRN-VOLUME file. Open refuses a directory that names another disk.
//   - volume ID: a random ID drawn when the directory is formatted (and
//     added at the first Open of a volume formatted before it existed):
//     a directory wiped and formatted again for the same disk has a new
//     one, which is how the cluster tells a replaced disk from one that
//     returns intact (VolumeID; docs/design/disks.md).
//   - shard: one file of an object's stripes, named only by
//     cairn.ShardName(version, i) = "<32 lower-case hex>.<index>". Names are
//     validated strictly (ValidateName), so no input can reach outside the
//     directory; object keys never become file names.
//   - block: BlockSize content bytes followed by their CRC-32C. A shard
//     file is its blocks and a 32-byte footer (length, whole-content CRC,
//     magic, footer CRC).
//   - acknowledged: Put returned nil. The shard was written under tmp/,
//     fsynced, its footer read back, renamed into shards/<hh>/ and the
//     directory fsynced, in that order.
//
// Invariants (crash-tested with vfs.MemFS.CrashClone at every step and
// with errorfs failing every write, sync, rename…):
//
//   - an acknowledged shard survives any crash intact;
//   - a shard name is either absent or names a complete, valid file —
//     never a torn one;
//   - a failed Put leaves no shard (unless it failed after the rename, on
//     the directory fsync: then the complete shard may stay) and no
//     temporary file (if even removing it fails, Fsck removes it by age
//     and Open removes it at the next start);
//   - bytes returned by a Reader passed their block's CRC.
//
// Usage sketch:
//
//	v, err := volume.Open(dir, volume.Options{DiskID: "node1/disk1", Create: true})
//	info, err := v.Put(ctx, cairn.ShardName(version, 2), body) // streams body
//	r, err := v.NewReader(ctx, name, off, n)                    // reads only the touched blocks
//	defer r.Close(); io.Copy(w, r)                              // ErrCorrupt names the block
//	rep, err := v.Fsck(ctx, volume.FsckOptions{TmpCutoff: now.Add(-time.Hour)})
//
// Errors wrap cairn sentinels: ErrInvalid, ErrNotFound, ErrCorrupt,
// ErrNoSpace (ENOSPC, EDQUOT, or below Options.MinFree). A failed fsync
// makes the volume refuse writes (ErrBroken, also cairn.ErrUnavailable)
// until it is reopened, because after a failed fsync the kernel may have
// dropped the dirty pages it could not write.
//
// Caveats: one process owns a directory, because Open removes every
// temporary file it finds; on Unix, Open holds a flock on the LOCK file and
// refuses a directory another process has open. Deletes are durable but a
// crash during one may leave the shard in place; nothing collects such
// leftovers yet (the scrubber, package node/scrub, checks shards but
// does not delete any: it reports damage for repair). The block size is fixed per format
// version.
package volume
