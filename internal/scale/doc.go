// Package scale holds the metadata scale test (issue 14, "Nothing
// unpaged"): on a real embedded etcd, a bucket of many objects and of
// multipart objects of many parts is listed through the S3 handler
// (ListObjectsV2 pages through all of it), a disk is lost, Scan queues
// a repair task for every affected stripe — more than one etcd reply
// could carry before the queue was paged — and Work drains the queue.
//
// The test writes manifests directly: the point is metadata scale, so
// shard contents stay out of it. Every shard of the test's manifests
// holds zeros (the parity of zeros is zeros), and the executor answers a
// rebuild with what the nodes would store — a shard of zeros of the
// asked size — without moving bytes.
//
// Sizes: the reduced form (the default, run in CI) is 5,000 objects and
// 20 multipart objects of 1,000 parts, more than one page of every
// listing; CAIRN_SCALE=full runs the size, 100,000 objects and
// 300 multipart objects of 1,000 parts. The test logs the etcd database
// size and the repair queue's throughput (tasks queued and drained per
// second); docs/design/meta.md, "Paging and limits", records a run.
//
// TestScaleLists pages ListMultipartUploads and ListBuckets through the
// S3 handler with the SDK's paginators (reduced: 2,500 uploads and 1,500
// buckets; full: 50,000 and 20,000).
//
// The package has no code of its own, only these tests.
package scale
