package cairn

import "fmt"

// RAIDPPolicy is the storage policy of objects kept in a RAIDP group: two
// replicas of every byte plus each disk's Lstor parity
// (docs/design/raidp.md, "In the cluster"). It is no code: its objects
// have a RAIDP layout (Manifest.RAIDP), not shards.
const RAIDPPolicy = "raidp"

// RAIDPLayout is where a raidp object's bytes are: spans of superchunks of
// one group, in content order.
type RAIDPLayout struct {
	Group string `json:"group"`
	// Generation is the group's generation when the object was written:
	// the replicas of Spans are those of that generation (a reader of a
	// newer group takes a moved superchunk's replicas from the group).
	Generation uint64      `json:"generation"`
	Spans      []RAIDPSpan `json:"spans"`
}

// RAIDPSpan is Length bytes at Offset of superchunk Superchunk, kept on
// Disks[0] slot Slots[0] and Disks[1] slot Slots[1], byte o of the span
// being byte Offset+o of both slots.
type RAIDPSpan struct {
	Superchunk int   `json:"superchunk"`
	Offset     int64 `json:"offset"`
	Length     int64 `json:"length"`
	// CRCs are the CRC-32C of each RAIDPBlock bytes of the span, the last
	// of what is left: a read checks every block it reads.
	CRCs  []uint32  `json:"crc32c"`
	Disks [2]DiskID `json:"disks"`
	Slots [2]int    `json:"slots"`
}

// RAIDPBlock is the unit of a RAIDP span's checksums (RAIDPSpan.CRCs).
const RAIDPBlock = 1 << 20

// raidpProblem returns the first rule a raidp object's manifest breaks
// ("" if none): the policy is RAIDPPolicy exactly when a RAIDP layout is
// set, such an object has no shards, coded stripes or parts, and its
// spans are well formed and add up to its size.
func (m *Manifest) raidpProblem() string {
	switch {
	case m.RAIDP == nil && m.Policy == RAIDPPolicy:
		return "policy raidp without a RAIDP layout"
	case m.RAIDP == nil:
		return ""
	case m.Policy != RAIDPPolicy:
		return fmt.Sprintf("a RAIDP layout with policy %s", m.Policy)
	case len(m.Parts) > 0 || !m.Layout.zero():
		return "a RAIDP layout beside shards, coded stripes or parts"
	case m.RAIDP.Group == "" || m.RAIDP.Generation == 0:
		return fmt.Sprintf("RAIDP layout of group %q, generation %d", m.RAIDP.Group, m.RAIDP.Generation)
	case len(m.RAIDP.Spans) == 0 && m.Size > 0:
		return "a RAIDP layout without spans"
	}
	var sum int64
	for i, s := range m.RAIDP.Spans {
		switch {
		case s.Superchunk < 0 || s.Offset < 0 || s.Length < 1:
			return fmt.Sprintf("RAIDP span %d: superchunk %d, offset %d, length %d", i, s.Superchunk, s.Offset, s.Length)
		case s.Disks[0] == "" || s.Disks[1] == "" || s.Disks[0] == s.Disks[1]:
			return fmt.Sprintf("RAIDP span %d: replicas on disks %q and %q", i, s.Disks[0], s.Disks[1])
		case s.Slots[0] < 0 || s.Slots[1] < 0:
			return fmt.Sprintf("RAIDP span %d: slots %d and %d", i, s.Slots[0], s.Slots[1])
		case int64(len(s.CRCs)) != (s.Length+RAIDPBlock-1)/RAIDPBlock:
			return fmt.Sprintf("RAIDP span %d: %d CRCs for %d bytes in blocks of %d", i, len(s.CRCs), s.Length, RAIDPBlock)
		}
		sum += s.Length
	}
	if sum != m.Size {
		return fmt.Sprintf("RAIDP spans add up to %d bytes, the object has %d", sum, m.Size)
	}
	return ""
}
