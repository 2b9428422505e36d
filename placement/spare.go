package placement

import (
	"fmt"
	"hash/fnv"

	"cairn"
)

// Spare chooses one disk for a shard that cannot go where placement put
// it (its disk is down, or lost and being rebuilt): among disks that ok
// accepts, the lowest rank wins, and ties go by rendezvous hashing on
// (key, disk), so the choice is the same every time it is asked and
// different shards spread evenly. key names the shard (e.g. its version
// and index). It reports false when ok accepts no disk.
func Spare(disks []cairn.Disk, key string, ok func(cairn.Disk) bool, rank func(cairn.Disk) int) (cairn.DiskID, bool) {
	var best cairn.DiskID
	bestRank, bestHash := 0, uint64(0)
	found := false
	for _, d := range disks {
		if !ok(d) {
			continue
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%s", key, d.ID)
		rk, hv := rank(d), h.Sum64()
		if !found || rk < bestRank || rk == bestRank && hv > bestHash {
			best, bestRank, bestHash, found = d.ID, rk, hv, true
		}
	}
	return best, found
}
