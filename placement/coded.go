package placement

import "cairn"

// CodedMargin is the blocks beyond K a fountain-coded stripe keeps after
// losing the failure domains its bounds allow: the lt code decodes from
// exactly K blocks 99.5 % of the time, and from K+2 practically always
// (docs/design/lt.md).
const CodedMargin = 2

// BlockBounds are how many blocks of one fountain-coded stripe a single
// disk and a single node may hold (CodedBounds).
type BlockBounds struct {
	PerDisk int
	PerNode int
}

// CodedBounds returns the bounds for a stripe of n coded blocks that k of
// them decode (k+margin practically always), spread over the disks whose
// nodes are nodeOf (nodeOf[i]: the node of disk i; one entry per disk).
//
// Each failure domain — a disk, a node — holds at most (n−k−margin)/2
// blocks, so that losing any two of them (two disks, two nodes, a node
// and a disk elsewhere) leaves k+margin blocks. When the nodes (the
// disks) are too few to hold n blocks that way, the bound is the even
// spread they allow, ⌈n/nodes⌉ (⌈n/disks⌉); and when nodes with few disks
// could not take their share, PerDisk and then PerNode are raised just
// enough for n blocks to fit at all. PerDisk never exceeds PerNode. With
// no disk, both are 0.
func CodedBounds(k, n, margin int, nodeOf []cairn.NodeID) BlockBounds {
	disksOn := map[cairn.NodeID]int{}
	for _, nd := range nodeOf {
		disksOn[nd]++
	}
	if len(nodeOf) == 0 || n <= 0 {
		return BlockBounds{}
	}
	even := func(domains int) int {
		c := (n - k - margin) / 2
		if c*domains < n {
			c = (n + domains - 1) / domains
		}
		return max(c, 1)
	}
	b := BlockBounds{PerDisk: even(len(nodeOf)), PerNode: even(len(disksOn))}
	b.PerDisk = min(b.PerDisk, b.PerNode)
	for b.capacity(disksOn) < n {
		if b.PerDisk < b.PerNode {
			b.PerDisk++
		} else {
			b.PerNode++
		}
	}
	return b
}

// capacity is how many blocks the disks of disksOn take within b.
func (b BlockBounds) capacity(disksOn map[cairn.NodeID]int) int {
	c := 0
	for _, d := range disksOn {
		c += min(b.PerNode, d*b.PerDisk)
	}
	return c
}

// Fits reports whether a disk holding onDisk blocks of the stripe, on a
// node holding onNode, may take one more.
func (b BlockBounds) Fits(onDisk, onNode int) bool {
	return onDisk < b.PerDisk && onNode < b.PerNode
}
