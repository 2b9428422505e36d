package cli

import (
	"testing"
	"time"

	"cairn/client"
	"cairn/client/clienttest"
	"cairn/client/slowdisk"
	"cairn/meta/mem"
)

// The console's engine panel shows the client's counters and the disks
// its tracker holds slow.
func TestEngineStatus(t *testing.T) {
	tr, err := slowdisk.New(slowdisk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(mem.New(), clienttest.NewMemShards(), client.Config{SlowDisks: tr})
	now := time.Now()
	if e := engineStatus(c, now); len(e.SlowDisks) != 0 || e.SlowMarks != 0 {
		t.Fatalf("a new client: %+v", e)
	}
	for range 3 {
		tr.ObserveBatch(now, []slowdisk.Sample{{Disk: "n/d1", Took: time.Second}, {Disk: "n/d2", Took: time.Millisecond}, {Disk: "n/d3", Took: time.Millisecond}})
	}
	e := engineStatus(c, now)
	if e.SlowMarks != 1 || len(e.SlowDisks) != 1 || e.SlowDisks[0].Disk != "n/d1" || e.SlowDisks[0].State != "slow" ||
		e.SlowDisks[0].Until != now.Add(5*time.Second).UnixMilli() {
		t.Fatalf("engine status %+v", e)
	}
}
