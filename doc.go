// Package cairn is the vocabulary every part of cairn shares: nodes, disks
// and their states, placement groups, buckets, object manifests, and the
// errors that cross package boundaries. It has no behaviour beyond
// validation; services (meta, node, client, s3) speak in these terms.
//
// Terms:
//
//   - node: a process serving one or more disks over the node protocol.
//   - disk: a directory on a node holding shard files; unit of failure.
//   - failure domain: node by default, rack or zone when labelled; placement
//     puts the shards of a stripe in distinct domains where it can.
//   - placement group (PG): an ordered list of n disks; objects hash to a PG.
//   - policy: the code of an object, e.g. "rs-4-2" (see package codec).
//   - manifest: the object's distribution description — size, policy, block
//     size, where each shard file lives and its checksum. An object exists
//     iff its manifest is committed.
//   - layout: where the bytes of an object, or of one part of a multipart
//     object, live: a block size and either erasure-coded shards (with
//     their PG) or fountain-coded stripes. A manifest is in exactly one
//     form (Manifest.Validate): one layout, or parts that each have one.
//   - version: a random 128-bit hex string naming one write of an object;
//     shard files are named by version and shard index, never by key.
package cairn
