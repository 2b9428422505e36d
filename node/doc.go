// Package node is cairn's storage node: it serves disks (package
// node/volume) over the node protocol, an authenticated HTTP API, and
// registers itself, its disks and a liveness lease in the metadata store.
// docs/design/node-protocol.md is the specification.
//
// Terms:
//
//   - Handler: the http.Handler of the protocol over a fixed set of
//     volumes. PUT, GET (range), DELETE of a shard; LIST of a disk's shards
//     (paginated); STAT of a disk; health; PUSH and PULL repair.
//   - Client: what the data path, repair and scrub call. It resolves a disk
//     ID to its node's address on every call and maps responses back to
//     cairn sentinel errors (ErrNotFound, ErrNoSpace, ErrCorrupt, ErrAuth,
//     ErrInvalid, ErrUnavailable). It speaks in the types of package
//     node/wire, so it satisfies client.Shards and repair.Executor as is.
//   - wire types: the protocol's paths, headers, JSON bodies, RepairSpec
//     and *wire.Error live in package node/wire, which clients import
//     instead of this server package.
//   - Server: a node process's core: opens the volumes, listens, serves,
//     registers in a Registry (the slice of meta.Store it uses) and keeps
//     the lease, refreshes disk space and sweeps stale temporary files.
//   - registration: each disk's record (cairn.Disk) as the node sees it:
//     space, Fault (the volume's Health), Volume (its volume ID) and Check
//     — "" until the volume's check (volume.Fsck of the identity and every
//     shard footer, in the background after the volume opens, and again
//     after a fault clears) has passed (cairn.CheckOK) or failed. The
//     director brings a down disk back only once its node reports the
//     trusted volume and a passed check (docs/design/disks.md).
//   - scrub: each served disk runs a scrubber (package node/scrub,
//     Config.Scrub; off with Config.NoScrub) that verifies every shard at
//     a bounded rate, yields to the requests the handler serves
//     (Handler.Busy), and records damage and its progress in the Registry
//     when that is also a scrub.Store (docs/design/scrub.md). Restarted with
//     the volume when a disk is re-formatted.
//   - re-format: a disk whose whole directory vanished while the node runs
//     is formatted again at the next refresh (unless DiskConfig.NoFormat),
//     as a restart would, and served in place of the old volume
//     (Handler.SetVolume): a new volume ID, which the director treats as
//     a replaced disk.
//   - key: a signing key derived from the cluster secret for one
//     principal, role/name (Key, DeriveKey; the secret never crosses the
//     network). The role (admin, director, gateway, node, reader) decides
//     which requests the node serves for it (roleOps; others → 403
//     forbidden). A CLI user's config may hold one such key instead of
//     the secret (ParseKey).
//   - request signature: every request is signed with HMAC-SHA256 under
//     a key, which it names, over its method, host, path, query, signing time,
//     nonce, body digest (or the unsigned-payload marker of a streamed
//     body) and protocol headers. The node refuses (401 → ErrAuth) a bad
//     signature, a time outside the skew window (HandlerConfig.Skew) and
//     a nonce it has seen (replay cache, bounded by
//     HandlerConfig.ReplayEntries; full → 503). docs/design/node-protocol.md,
//     "Authentication".
//
// Repair (push and pull): a wire.RepairSpec rebuilds f = len(Store) lost shards
// of a bytewise linear code from helper shards (Hops): rebuilt shard j =
// Σ_i Hops[i].Coeffs[j]·helper_i in GF(2^8), computed with codec.MulAdd.
// The work moves by slice (the request unit, Unit bytes): slice s of
// every shard is itself a valid stripe. In a PUSH chain (Client.Push) the
// coordinator calls the first hop; each hop reads its slice S_i, receives
// the f partial blocks I_{i-1} of the slice from the previous hop (POST
// /v1/push: the partial stream, f·L bytes per slice), adds Coeffs·S_i and
// forwards the f partials; the last hop streams the finished slices to the
// targets (Store), writing locally when a target disk is its own. Hops on
// the same node in a row run in one request. In a PULL (Client.Pull) one
// node, the puller, fetches every helper at once and computes the f shards
// itself. A node answers a push only once the rest of the chain has, so
// the coordinator gets one answer: what each target stored, or a *wire.Error
// naming the helper or target at fault (a corrupt or missing helper
// several hops down, a full target), whichever node found it. The PUSH
// property: no node receives more than f partials per slice position,
// where the puller of a PULL receives k slices.
//
// RAIDP (raidp.go; docs/design/raidp.md, "In the cluster"): a disk served
// with an Lstor (DiskConfig.Lstor) also has RAIDP slots; WriteRAIDP,
// ReadRAIDP, ZeroRAIDP and ReadLstor reach them. The node does the
// read-modify-write and the parity update (node/lstor), so a write carries
// only its new bytes. Calls are whole-buffer (at most wire.MaxRAIDPCall),
// checked end to end by a CRC-32C header.
//
// Streaming and cancellation: PUT bodies and GET responses are streamed
// block by block; nothing holds a whole shard. The request's context
// reaches the volume's copy loops, so a client that cancels stops the
// node's disk work: a cancelled PUT leaves no shard and no temporary file,
// a cancelled GET stops reading. Stalled transfers end after IdleTimeout.
//
// Timeouts (the client's): every call connects within Timeouts.Dial, a
// small call (delete, list, stat) ends within Call, and a shard stream
// fails when its node does not answer within Header or moves no byte for
// Idle — a watchdog per call, armed only while the call waits on the node
// (docs/design/node-protocol.md, "Client timeouts"). Push and Pull answer
// when a whole repair is done: only their context bounds them.
//
// Corruption: the node verifies each block before sending it. If the
// first block is bad the GET fails with 422 "corrupt"; later, the body
// stops at the bad block and the X-Cairn-Status trailer says "corrupt".
// The client's reader returns the good bytes and then an error wrapping
// cairn.ErrCorrupt. It also checks the byte count and a CRC of the body
// (trailer) so a transfer damaged in flight is ErrCorrupt too, and a
// connection cut before the trailer is ErrUnavailable, never EOF.
//
// Usage sketch:
//
//	s, _ := node.NewServer(node.Config{Node: "node1", Secret: secret, Registry: store,
//		Disks: []node.DiskConfig{{ID: "node1/disk1", Path: "/data/disk1"}}})
//	err := s.Start(ctx)
//	defer s.Close()
//
//	c := node.NewClient(secret, resolve, nil) // the admin key; NewKeyClient for a role's key; WithTimeouts to change them
//	info, err := c.PutShard(ctx, disk, cairn.ShardName(version, i), stream)
//	r, err := c.GetShard(ctx, disk, name, off, n)
//	stored, err := c.Push(ctx, wire.RepairSpec{Size: size, Unit: 1 << 20, Hops: chain, Store: targets})
//
// Link shaping: Config.LinkRate gives a node a slow network link for
// repair experiments (one token bucket per direction, shared by every
// connection the node accepts or dials; package internal/linkshape), and
// HandlerConfig.RepairRate paces its repair output with the same limiter.
//
// Caveats: a push or pull error can reach the coordinator before nodes
// further down a chain have finished removing their temporary files (they
// do, as their requests are cancelled). Partial blocks carry no checksum
// of their own; the rebuilt shards' CRCs, which the coordinator checks
// against the manifest, cover them. Without TLS, data crosses the network in clear;
// signatures stop forged, altered and replayed requests, not eavesdropping.
// Streamed bodies are not covered by the signature (their CRCs are).
package node
