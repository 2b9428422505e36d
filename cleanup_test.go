package cairn

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFilesAndSuperseded(t *testing.T) {
	v := strings.Repeat("a", 32)
	w := strings.Repeat("b", 32)
	m := &Manifest{Version: v, Layout: Layout{Shards: []ShardLoc{{Disk: "n1/d1"}, {Disk: ""}, {Disk: "n3/d1", Row: 7}}}}
	want := []ShardFile{{"n1/d1", v + ".0"}, {"n3/d1", v + ".7"}}
	if got := m.Files(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Files: %v, want %v", got, want)
	}
	coded := &Manifest{Version: v, Parts: []Part{{Version: w, Layout: Layout{Coded: []CodedStripe{{Version: v, Blocks: []BlockLoc{{ID: 12, Disk: "n2/d2"}}}}}}}}
	if got := coded.Files(); !reflect.DeepEqual(got, []ShardFile{{"n2/d2", v + ".12"}}) {
		t.Fatalf("Files of a multipart, coded object: %v", got)
	}
	moved := *m
	moved.Shards = []ShardLoc{{Disk: "n1/d1"}, {Disk: "n2/d1"}, {Disk: "n4/d1", Row: 7}}
	if got := Superseded(m, &moved); !reflect.DeepEqual(got, []ShardFile{{"n3/d1", v + ".7"}}) {
		t.Fatalf("Superseded by a repair: %v", got)
	}
	if got := Superseded(m, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("Superseded by nothing: %v", got)
	}
	if got := Superseded(nil, m); got != nil {
		t.Fatalf("Superseded of nothing: %v", got)
	}
}

func TestCleanupPrefix(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "0000000000000000000"},
		{time.Unix(-5, 0), "0000000000000000000"},
		{time.Unix(1, 2), "0000000001000000002"},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), "9223372036854775807"},
	}
	for _, tc := range tests {
		if got := CleanupPrefix(tc.t); got != tc.want {
			t.Errorf("CleanupPrefix(%v) = %s, want %s", tc.t, got, tc.want)
		}
	}
	if a, b := CleanupID(time.Unix(9, 0), "ff"), CleanupID(time.Unix(10, 0), "00"); a >= b {
		t.Errorf("IDs do not sort by Since: %s, %s", a, b)
	}
}
