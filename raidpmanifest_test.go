package cairn

import (
	"errors"
	"strings"
	"testing"
)

func TestRAIDPManifestValidate(t *testing.T) {
	good := func() *Manifest {
		return &Manifest{Bucket: "b", Key: "k", Version: strings.Repeat("a", 32), Size: 30, Policy: RAIDPPolicy,
			RAIDP: &RAIDPLayout{Group: "g1", Generation: 1, Spans: []RAIDPSpan{
				{Superchunk: 3, Offset: 100, Length: 10, CRCs: []uint32{1}, Disks: [2]DiskID{"n1/d1", "n2/d1"}, Slots: [2]int{0, 1}},
				{Superchunk: 4, Offset: 0, Length: 20, CRCs: []uint32{2}, Disks: [2]DiskID{"n2/d1", "n3/d1"}, Slots: [2]int{2, 2}},
			}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mut  func(m *Manifest)
		want string
	}{
		"no layout":       {func(m *Manifest) { m.RAIDP = nil }, "without a RAIDP layout"},
		"other policy":    {func(m *Manifest) { m.Policy = "rep-2" }, "with policy rep-2"},
		"shards too":      {func(m *Manifest) { m.Shards = []ShardLoc{{Disk: "d", Size: 1}}; m.BlockSize = 1 }, "beside shards"},
		"no group":        {func(m *Manifest) { m.RAIDP.Group = "" }, "group"},
		"no generation":   {func(m *Manifest) { m.RAIDP.Generation = 0 }, "generation 0"},
		"sizes":           {func(m *Manifest) { m.Size = 31 }, "add up to 30 bytes, the object has 31"},
		"empty span":      {func(m *Manifest) { m.RAIDP.Spans[1].Length = 0 }, "span 1"},
		"negative offset": {func(m *Manifest) { m.RAIDP.Spans[0].Offset = -1 }, "span 0"},
		"one disk twice":  {func(m *Manifest) { m.RAIDP.Spans[0].Disks[1] = "n1/d1" }, "replicas on disks"},
		"no disk":         {func(m *Manifest) { m.RAIDP.Spans[0].Disks[0] = "" }, "replicas on disks"},
		"negative slot":   {func(m *Manifest) { m.RAIDP.Spans[1].Slots[0] = -1 }, "slots -1"},
		"no spans":        {func(m *Manifest) { m.RAIDP.Spans = nil }, "without spans"},
		"CRCs":            {func(m *Manifest) { m.RAIDP.Spans[0].CRCs = nil }, "0 CRCs for 10 bytes"},
	} {
		m := good()
		c.mut(m)
		err := m.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", name, err, c.want)
		}
	}
	empty := good()
	empty.Size, empty.RAIDP.Spans = 0, nil
	if err := empty.Validate(); err != nil {
		t.Errorf("an empty raidp object: %v", err)
	}
}
