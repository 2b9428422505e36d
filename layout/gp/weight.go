package gp

// WeightUnit is the chunk size of repair weight 1: the paper weighs a 4 MB
// chunk 1 and a 256 MB chunk 64 (§5.1, "Paralleled Recovery").
const WeightUnit = 4 << 20

// DefaultBudget is the paper's global weight per repairer: 512, e.g. eight
// 256 MB chunks or four 256 MB and eight 128 MB chunks at once.
const DefaultBudget = 512

// Weight returns the repair weight of a piece of size bytes: ⌈size /
// WeightUnit⌉, at least 1.
func Weight(size int64) int {
	return int(max(1, (size+WeightUnit-1)/WeightUnit))
}

// Admit returns how many of the queued repair tasks, in queue order, may
// start now: tasks start in order while the running weight plus theirs
// stays within budget. The queue is FIFO so big chunks are not starved; a
// task heavier than the whole budget starts only when nothing runs.
// queue holds the tasks' weights; running is the weight already running.
func Admit(queue []int, running, budget int) int {
	n := 0
	for _, w := range queue {
		if running+w > budget && (running > 0 || n > 0) {
			break
		}
		running += w
		n++
	}
	return n
}
