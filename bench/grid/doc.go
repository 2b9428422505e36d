// Package grid is the Grid RS storage paper's experiment (Pitkänen et
// al.; docs/papers.md) on real storage nodes: one client process stripes
// files with Reed-Solomon codes to nodes behind wide-area links of
// different speeds and latencies, and compares striping with
// replication.
//
// Vocabulary:
//
//   - link: the path between the client and one node (Link): a rate in
//     each direction and a round-trip time. Links shapes the client's
//     connections per node address (package internal/linkshape's
//     limiters, plus one RTT per request/answer exchange) and counts the
//     bytes each way: the data moved.
//   - site: a link's label; the paper's nodes were in Switzerland (with
//     the client), Austria, Slovakia, Finland and the USA. Near is a
//     node at the client's site.
//   - packet: the paper's unit of coding, k packets in, n out; cairn's
//     block (client.Config.BlockSize, the shard bytes of one stripe,
//     default 1 MiB).
//   - coding time: the time the client spends in its code's Encode
//     (upload) and Reconstruct (download) calls, measured by wrapping
//     the codes it builds (Coding, through client.Config.Codes). The
//     client encodes one stripe while the previous ones are sent, so
//     coding overlaps transfers: its share is coding ÷ wall time, and
//     "transfer" is the rest. A download decodes only when a data shard
//     is missing from the first K shards to arrive; when every data
//     shard arrives first, reassembly is a copy, not coding.
//   - data moved: bytes over the links (HTTP bodies and headers), sent
//     for an upload, received for a download, ÷ the file size: n/k for
//     striping, the number of copies for replication (MovedRatio).
//   - availability: the probability that a file is readable when each
//     node is down, independently, with probability p — estimated by a
//     Monte-Carlo over the cluster's real PG table (placement), next to
//     the binomial formula that holds when every PG uses distinct nodes.
//
// The parts (Row.Part):
//
//	transfer      rs-5-3 (the paper's k=5, n=8) upload and download by
//	              file size, split into coding and transfer (Figs. 7, 8)
//	packet-size   the same at one size, by packet size (10–50 kB and
//	              cairn's 1 MiB), with the code alone in memory (codec;
//	              Fig. 5)
//	replication   4-available files: rs-5-4 (k=5, n=9) against rep-5,
//	              every node far (global) and with the node of shard 0 —
//	              the one a read asks first — on a near link for the
//	              download (near; its upload runs on the far links, as
//	              which node holds shard 0 is known only after it)
//	              (Figs. 9, 10)
//	availability  readable with p of the nodes down, rs-5-4 and rep-5
//
// Each transfer row has a links-only model beside it (UploadModel: the
// slowest shard's link; DownloadModel: the K-th fastest of the K+1
// shards a read asks first, cairn's δ = 1).
//
// Caveats: the links are shaped in the client process, so the nodes'
// own traffic is not; the RTT is charged once per request (no TCP
// window, no connection set-up). The client writes no spare streams
// (client.Config.Spares −1), as the paper's client, so a slow link slows
// the upload instead of being replaced.
package grid
