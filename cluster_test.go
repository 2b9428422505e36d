package cairn

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateBucketName(t *testing.T) {
	tests := []struct {
		name string
		why  string // part of the refusal; "" = valid
	}{
		{"photos", ""},
		{"my.bucket-2", ""},
		{"abc", ""},
		{strings.Repeat("a", 63), ""},
		{"xn-a", ""},         // only "xn--" is reserved
		{"a-s3aliasx", ""},   // the suffix must end the name
		{"sthree", ""},       // only "sthree-"
		{"ol-s3", ""},        // only "--ol-s3"
		{"bucket.mrap1", ""}, // only the suffix ".mrap"
		{"ab", "3 to 63"},
		{strings.Repeat("a", 64), "3 to 63"},
		{"Photos", "lower-case"},
		{"a_b", "lower-case"},
		{"-ab", "start and end"},
		{"ab.", "start and end"},
		{"a..b", `".."`},
		{"192.168.5.4", "IP address"},
		{"xn--bcher-kva", `"xn--"`},
		{"sthree-bucket", `"sthree-"`},
		{"sthree-configurator", `"sthree-"`},
		{"amzn-s3-demo-bucket", `"amzn-s3-demo-"`},
		{"my-ap-s3alias", `"-s3alias"`},
		{"my-olap--ol-s3", `"--ol-s3"`},
		{"global.mrap", `".mrap"`},
		{"dir--usw2-az1--x-s3", `"--x-s3"`},
		{"tables--table-s3", `"--table-s3"`},
	}
	for _, tc := range tests {
		err := ValidateBucketName(tc.name)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%q refused: %v", tc.name, err)
		case tc.why != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%q: %v, want ErrInvalid saying %s", tc.name, err, tc.why)
		}
	}
}

// Records written when the out state was called "failed" read as out.
func TestDiskStateReadsFailedAsOut(t *testing.T) {
	var d Disk
	if err := json.Unmarshal([]byte(`{"id":"n/d","state":"failed"}`), &d); err != nil {
		t.Fatal(err)
	}
	if d.State != DiskOut || !d.State.Valid() {
		t.Fatalf("state %q", d.State)
	}
	for _, s := range []DiskState{DiskUp, DiskSuspect, DiskDown, DiskDraining, DiskOut} {
		b, _ := json.Marshal(s)
		var got DiskState
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Fatalf("%s round-trips as %q (%v)", s, got, err)
		}
	}
}

func TestDiskChangeApply(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Disk{ID: "n/d", State: DiskDown, Since: t0, Reason: "old", Trusted: "v1", Volume: "v2"}
	tests := []struct {
		name string
		c    DiskChange
		want Disk
		err  error
	}{
		{"any state", DiskChange{To: DiskUp, Since: t0.Add(time.Hour), Reason: "back"},
			Disk{ID: "n/d", State: DiskUp, Since: t0.Add(time.Hour), Reason: "back", Trusted: "v1", Volume: "v2"}, nil},
		{"from the right state, keeping since, trusting", DiskChange{From: DiskDown, To: DiskDown, Reason: "replaced", Trust: "v2"},
			Disk{ID: "n/d", State: DiskDown, Since: t0, Reason: "replaced", Trusted: "v2", Volume: "v2"}, nil},
		{"from the wrong state", DiskChange{From: DiskUp, To: DiskOut}, d, ErrConflict},
		{"decided on another volume", DiskChange{From: DiskDown, To: DiskUp, IfVolume: "v1"}, d, ErrConflict},
		{"decided on this volume", DiskChange{From: DiskDown, To: DiskUp, IfVolume: "v2"},
			Disk{ID: "n/d", State: DiskUp, Since: t0, Trusted: "v1", Volume: "v2"}, nil},
		{"to no state", DiskChange{To: "melted"}, d, ErrInvalid},
		{"a negative move rate", DiskChange{To: DiskDraining, MoveRate: -1}, d, ErrInvalid},
		{"draining at a rate", DiskChange{To: DiskDraining, MoveRate: 1 << 20, Reason: "drain"},
			Disk{ID: "n/d", State: DiskDraining, Since: t0, Reason: "drain", Trusted: "v1", Volume: "v2", MoveRate: 1 << 20}, nil},
	}
	draining := d
	draining.State, draining.MoveRate = DiskDraining, 5000
	tests = append(tests, []struct {
		name string
		c    DiskChange
		want Disk
		err  error
	}{
		{"within draining keeps the rate", DiskChange{From: DiskDraining, To: DiskDraining, Reason: "adopted"},
			Disk{ID: "n/d", State: DiskDraining, Since: t0, Reason: "adopted", Trusted: "v1", Volume: "v2", MoveRate: 5000}, nil},
		{"out of draining clears it", DiskChange{From: DiskDraining, To: DiskUp, Reason: "in"},
			Disk{ID: "n/d", State: DiskUp, Since: t0, Reason: "in", Trusted: "v1", Volume: "v2"}, nil},
	}...)
	for i, tc := range tests {
		from := d
		if i >= len(tests)-2 {
			from = draining
		}
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Apply(from)
			if !errors.Is(err, tc.err) || err == nil && got != tc.want {
				t.Fatalf("got %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg := Disk{ID: "n/d", Path: "/p", Free: 5, State: DiskUp, Since: t0.Add(time.Hour), Volume: "v2", Check: CheckOK}
	first := Registered(nil, reg)
	if first.Trusted != "v2" || first.State != DiskUp {
		t.Fatalf("first registration %+v", first)
	}
	old := Disk{ID: "n/d", Path: "/old", State: DiskDraining, Since: t0, Reason: "why", Trusted: "v1", Volume: "v1", MoveRate: 7}
	got := Registered(&old, reg)
	want := Disk{ID: "n/d", Path: "/p", Free: 5, State: DiskDraining, Since: t0, Reason: "why", Trusted: "v1", Volume: "v2", Check: CheckOK, MoveRate: 7}
	if got != want || !got.Replaced() {
		t.Fatalf("re-registration %+v, want %+v (replaced)", got, want)
	}
}
