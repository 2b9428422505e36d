// Package client is cairn's data path: it turns a stream into an
// erasure-coded object on the cluster's disks and back, talking to the
// metadata store and to storage nodes directly (the Grid paper's client:
// the client encodes). The S3 gateway and the CLI both use it.
//
// Vocabulary:
//
//   - block: one shard's bytes of one stripe (Manifest.BlockSize; the last
//     stripe's are just big enough for its data: Layout.StripeBlock).
//   - stripe: K data blocks and M parity blocks; stripe s's block i is at
//     offset s·BlockSize of shard file i.
//   - small object: one of at most Config.SmallObject bytes (16 KiB),
//     stored as t+1 copies that survive the t losses its policy survives
//     (small.go; Layout.Code names the copies' code).
//   - window: a run of consecutive stripes a GET fetches with one request per
//     shard, so requests are large and decoding is batched.
//   - δ (ReadExtra): shards requested beyond K; a window is decoded from the
//     first K that arrive (or any decodable set) and the rest are cancelled.
//
// PUT reads the body stripe by stripe, encodes, and streams each shard to
// its disk in parallel, one request per shard; client/drive runs the
// requests and the speculative write (client/engine), which replaces a
// straggling or failed stream with a spare parity row on a spare disk.
// The object becomes visible only when every shard of the policy is durable
// and the manifest commits (compare-and-swap); on any failure nothing is
// visible and the written shards are queued for deletion (discard). No
// request deletes a shard itself: the metadata store queues the files an
// overwrite, a delete or a multipart completion drops, in the same
// transaction, and the director's cleanup duty deletes them after a grace
// period, so a GET that started before reads its version to the end
// (docs/design/cleanup.md). A conditional write (PutOptions.If,
// CompleteUploadIf: S3's If-None-Match: * and If-Match) checks its
// Condition against the manifest its compare-and-swap replaces, each time
// it tries, so the check and the commit are one atomic step.
//
// A PUT's memory is a ring of pooled stripe buffers of N·BlockSize bytes
// (data and parity), taken as the stripes come: 4 of them, or, when the
// PUT can use spares (a code with spare rows, and spare disks), enough
// for the first SpareWindow data bytes, which a spare starts from, and at
// least 4: max(4, min(SpareWindow ÷ (K·BlockSize), the object's stripes if
// known)). SpareWindow is 64 MiB by default, so an rs-4-2 PUT with 1 MiB
// blocks holds up to 16 stripes, 96 MiB, and a smaller object only its own
// stripes. Add K·BlockSize for the
// body's first stripe and BlockSize per spare stream. With Config.Memory
// (a Budget shared by a gateway's requests), the pipeline's 4 stripes are
// waited for and the spare window beyond them is kept only as far as the
// budget has memory free when the PUT starts; a GET takes (N/K + 2)
// windows. A request that waits longer than the budget's wait fails with
// ErrBusy.
//
// GET reads only the stripes a range touches, a window (WindowBytes,
// default 16 MiB of data) at a time, ahead of its reader; client/drive
// runs a window's fetches and the speculative read, and the window ends
// when every fetch it started has. A shard that fails, is missing or is
// corrupt counts as an erasure: the window is decoded from other shards
// and the damage is reported through Config.OnDamage (for repair).
//
// Encryption at rest (sse.go, docs/design/encryption.md): a PUT with
// PutOptions.SSE (or into a bucket with default encryption) draws a data
// key, seals it (Config.Keys for SSE-S3, the customer's key for SSE-C) and
// stores the body's ciphertext, made segment by segment before the codec
// sees it; the manifest keeps the sealed key and the plaintext size. GetWith
// reads only the ciphertext segments a range touches and decrypts them; a
// segment that fails authentication although the shards passed their
// checksums is read again around each shard in turn. The plaintext's MD5
// (the ETag) is hashed on a goroutine of its own, and a GET decrypts on
// one of its own up to 1 MiB ahead of its reader (4 chunks of 256 KiB,
// beside the windows Config.Memory counts).
//
// Metadata reads that fail transiently (cairn.IsPermanent: an etcd leader
// election, a lost connection) are retried with a jittered backoff for at
// most about 5 s (retrymeta.go); the manifest commit retries a lost
// compare-and-swap and transient errors, at most 16 times. Both use
// package internal/retry; writes other than the commit are not retried.
//
// Caveats: a failed write's files are queued best effort, after the
// failure: if the store is down too, or the commit's outcome is unknown,
// they stay as garbage files for the orphan collector (they are never
// visible). A GET that runs longer than the cleanup grace period after its
// object was overwritten may find its shards gone.
package client
