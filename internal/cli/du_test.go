package cli

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"cairn"
)

// duReport lists every bucket (empty ones and counted ones the cluster
// map no longer has), every code with its expansion, every node's disks
// summed, and with disks every disk, empty ones too.
func TestDuReport(t *testing.T) {
	u := cairn.Usage{
		Buckets: map[string]cairn.Tally{"photos": {Objects: 2, Logical: 1000, Stored: 1600}, "gone": {Objects: 1, Logical: 10, Stored: 111}},
		Codes:   map[string]cairn.Tally{"rs-4-2": {Objects: 2, Logical: 1000, Stored: 1600}, "rep-3": {Objects: 1, Logical: 10, Stored: 111}},
		Disks:   map[cairn.DiskID]cairn.DiskTally{"n1/d1": {Files: 2, Bytes: 600}, "n1/d2": {Files: 1, Bytes: 500}, "n2/d1": {Files: 3, Bytes: 611}, "old/d9": {Files: 1, Bytes: 1}},
	}
	buckets := []cairn.Bucket{{Name: "photos"}, {Name: "empty"}}
	disks := []cairn.Disk{{ID: "n1/d1", Node: "n1"}, {ID: "n1/d2", Node: "n1"}, {ID: "n2/d1", Node: "n2"}, {ID: "n3/d1", Node: "n3"}}
	r := duReport(u, buckets, disks, true)
	want := &DuReport{
		Buckets: []BucketDu{{"empty", cairn.Tally{}}, {"gone", u.Buckets["gone"]}, {"photos", u.Buckets["photos"]}},
		Total:   cairn.Tally{Objects: 3, Logical: 1010, Stored: 1711},
		Codes:   []CodeDu{{"rep-3", u.Codes["rep-3"], 3}, {"rs-4-2", u.Codes["rs-4-2"], 1.5}},
		Nodes: []NodeDu{{"?", cairn.DiskTally{Files: 1, Bytes: 1}}, {"n1", cairn.DiskTally{Files: 3, Bytes: 1100}},
			{"n2", cairn.DiskTally{Files: 3, Bytes: 611}}, {"n3", cairn.DiskTally{}}},
		Disks: []DiskDu{{"n1/d1", "n1", u.Disks["n1/d1"]}, {"n1/d2", "n1", u.Disks["n1/d2"]}, {"n2/d1", "n2", u.Disks["n2/d1"]},
			{"n3/d1", "n3", cairn.DiskTally{}}, {"old/d9", "?", u.Disks["old/d9"]}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("report\n got %+v\nwant %+v", r, want)
	}
	var out bytes.Buffer
	printDu(&out, r)
	for _, line := range []string{"photos         2        1000 B   1.6 KiB  1.600", "rs-4-2  2        1000 B   1.6 KiB  1.600           1.500", "n3/d1   n3    0      0 B"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
	if r := duReport(u, buckets, disks, false); r.Disks != nil {
		t.Errorf("disks listed without asking: %+v", r.Disks)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 40: "3.0 TiB", -2048: "-2.0 KiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDuUsage(t *testing.T) {
	out, _, err := run(t, "admin", "du", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cairn admin du [--json] [--disks] [BUCKET]", "logical", "STORED/LOGICAL", "EXPANSION", "rep-3", "not counted"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := run(t, "admin", "du", "a", "b"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "0 to 1 argument") {
		t.Errorf("two buckets: %v, want a usage error", err)
	}
}
