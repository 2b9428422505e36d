// Package codecbench measures a code's throughput for `cairn bench codec`:
// encode, reconstruct with one and with M data shards lost (decode1,
// decodem), repair of one lost shard, the mul-acc primitive dst ^= c·src,
// and memcpy of the same bytes as the reference measured in the same run.
//
// Vocabulary: an Op is one operation on private buffers; Measure runs it on
// T goroutines (each with its own buffers) for a fixed wall-clock time and
// reports bytes per second over all goroutines. Bytes credited per call:
//
//	encode, decode1, decodem  data bytes of the stripe, K·shard
//	repair                    bytes of the rebuilt shard, shard
//	mulacc, memcpy            bytes of the source, K·shard (memcpy) or shard (mulacc)
//
// The repair op adds repair_read_bytes: bytes read from helpers per byte
// rebuilt (K for RS, the group size for LRC, d·β/α for Clay).
package codecbench
