// Package node is cairn's storage node: it serves disks (package
// node/volume) over the node protocol, an authenticated HTTP API, and
// registers itself, its disks and a liveness lease in the metadata store.
// docs/design/node-protocol.md is the specification.
//
// Terms:
//
//   - Handler: the http.Handler of the protocol over a fixed set of
//     volumes. PUT, GET (range), DELETE of a shard; LIST of a disk's shards
//     (paginated); STAT of a disk; health.
//   - Client: what the data path, repair and scrub call. It resolves a disk
//     ID to its node's address on every call and maps responses back to
//     cairn sentinel errors (ErrNotFound, ErrNoSpace, ErrCorrupt, ErrAuth,
//     ErrInvalid, ErrUnavailable).
//   - Server: a node process's core: opens the volumes, listens, serves,
//     registers in a Registry (the slice of meta.Store it uses) and keeps
//     the lease, refreshes disk space and sweeps stale temporary files.
//   - cluster secret: every request carries "Authorization: Bearer
//     <secret>", compared in constant time; otherwise 401 → ErrAuth.
//
// Streaming and cancellation: PUT bodies and GET responses are streamed
// block by block; nothing holds a whole shard. The request's context
// reaches the volume's copy loops, so a client that cancels stops the
// node's disk work: a cancelled PUT leaves no shard and no temporary file,
// a cancelled GET stops reading. Stalled transfers end after IdleTimeout.
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
//	c := node.NewClient(secret, resolve, nil)
//	info, err := c.PutShard(ctx, disk, cairn.ShardName(version, i), stream)
//	r, err := c.GetShard(ctx, disk, name, off, n)
//
// Caveats: plain HTTP — the secret and data cross the network in clear
// (TLS is for a later issue); the secret is one shared bearer token, not a
// per-request signature, so anyone who sees traffic can replay it.
package node
