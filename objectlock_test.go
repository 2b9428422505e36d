package cairn

import (
	"errors"
	"testing"
	"time"
)

func TestObjectLockCheck(t *testing.T) {
	tests := []struct {
		l  ObjectLock
		ok bool
	}{
		{ObjectLock{}, true},
		{ObjectLock{Mode: LockGovernance, Days: 1}, true},
		{ObjectLock{Mode: LockCompliance, Years: 100}, true},
		{ObjectLock{Mode: LockCompliance, Days: 36500}, true},
		{ObjectLock{Mode: LockCompliance, Days: 36501}, false},
		{ObjectLock{Mode: LockCompliance, Years: 101}, false},
		{ObjectLock{Mode: LockGovernance}, false},
		{ObjectLock{Mode: LockGovernance, Days: 1, Years: 1}, false},
		{ObjectLock{Mode: LockGovernance, Days: -1}, false},
		{ObjectLock{Mode: "governance", Days: 1}, false},
		{ObjectLock{Days: 1}, false},
	}
	for _, tc := range tests {
		err := tc.l.Check()
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v.Check() = %v, want ok %v", tc.l, err, tc.ok)
		}
	}
	created := time.Date(2024, 2, 29, 10, 0, 0, 0, time.UTC)
	if r := (&ObjectLock{Mode: LockGovernance, Years: 1}).DefaultRetention(created); r.Mode != LockGovernance || !r.Until.Equal(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("default retention of a year from a leap day: %+v", r)
	}
	if r := (&ObjectLock{Mode: LockCompliance, Days: 3}).DefaultRetention(created); !r.Until.Equal(created.AddDate(0, 0, 3)) {
		t.Errorf("default retention of 3 days: %+v", r)
	}
	if r := (&ObjectLock{}).DefaultRetention(created); r != nil {
		t.Errorf("no default rule gave %+v", r)
	}
	var none *ObjectLock
	if r := none.DefaultRetention(created); r != nil {
		t.Errorf("no Object Lock gave %+v", r)
	}
}

func TestCheckDelete(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	tests := []struct {
		name   string
		r      *Retention
		hold   bool
		bypass bool
		locked bool
	}{
		{"none", nil, false, false, false},
		{"compliance", &Retention{LockCompliance, later}, false, false, true},
		{"compliance bypass", &Retention{LockCompliance, later}, false, true, true},
		{"compliance expired", &Retention{LockCompliance, earlier}, false, false, false},
		{"compliance until now", &Retention{LockCompliance, now}, false, false, false},
		{"governance", &Retention{LockGovernance, later}, false, false, true},
		{"governance bypass", &Retention{LockGovernance, later}, false, true, false},
		{"legal hold", nil, true, true, true},
		{"legal hold expired retention", &Retention{LockGovernance, earlier}, true, false, true},
	}
	for _, tc := range tests {
		m := &Manifest{Bucket: "b", Key: "k", Version: "v", Retention: tc.r, LegalHold: tc.hold}
		err := m.CheckDelete(now, tc.bypass)
		if (err != nil) != tc.locked || err != nil && !errors.Is(err, ErrLocked) {
			t.Errorf("%s: CheckDelete = %v, want locked %v", tc.name, err, tc.locked)
		}
	}
}

func TestLockChangeApply(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gov := &Retention{LockGovernance, now.Add(48 * time.Hour)}
	comp := &Retention{LockCompliance, now.Add(48 * time.Hour)}
	expired := &Retention{LockCompliance, now.Add(-time.Hour)}
	longer := func(mode string) *Retention { return &Retention{mode, now.Add(72 * time.Hour)} }
	shorter := func(mode string) *Retention { return &Retention{mode, now.Add(24 * time.Hour)} }
	on := true
	tests := []struct {
		name string
		old  *Retention
		c    LockChange
		want error // nil: allowed
	}{
		{"set on none", nil, LockChange{SetRetention: true, Retention: comp}, nil},
		{"extend compliance", comp, LockChange{SetRetention: true, Retention: longer(LockCompliance)}, nil},
		{"shorten compliance", comp, LockChange{SetRetention: true, Retention: shorter(LockCompliance)}, ErrLocked},
		{"shorten compliance bypass", comp, LockChange{SetRetention: true, Retention: shorter(LockCompliance), BypassGovernance: true}, ErrLocked},
		{"remove compliance", comp, LockChange{SetRetention: true, BypassGovernance: true}, ErrLocked},
		{"compliance to governance", comp, LockChange{SetRetention: true, Retention: longer(LockGovernance), BypassGovernance: true}, ErrLocked},
		{"governance to compliance", gov, LockChange{SetRetention: true, Retention: comp}, nil},
		{"shorten governance", gov, LockChange{SetRetention: true, Retention: shorter(LockGovernance)}, ErrLocked},
		{"shorten governance bypass", gov, LockChange{SetRetention: true, Retention: shorter(LockGovernance), BypassGovernance: true}, nil},
		{"remove governance", gov, LockChange{SetRetention: true}, ErrLocked},
		{"remove governance bypass", gov, LockChange{SetRetention: true, BypassGovernance: true}, nil},
		{"shorten expired", expired, LockChange{SetRetention: true, Retention: &Retention{LockGovernance, now.Add(-2 * time.Hour)}}, nil},
		{"legal hold only", comp, LockChange{LegalHold: &on}, nil},
		{"bad mode", nil, LockChange{SetRetention: true, Retention: &Retention{"WEEKLY", now}}, ErrInvalid},
		{"no date", nil, LockChange{SetRetention: true, Retention: &Retention{Mode: LockGovernance}}, ErrInvalid},
	}
	for _, tc := range tests {
		r, hold, err := tc.c.Apply(tc.old, false, now)
		switch {
		case tc.want == nil && err != nil, tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: Apply = %v, want %v", tc.name, err, tc.want)
		case err != nil:
		case tc.c.SetRetention && tc.c.Retention == nil && r != nil, tc.c.SetRetention && tc.c.Retention != nil && *r != *tc.c.Retention,
			!tc.c.SetRetention && r != tc.old:
			t.Errorf("%s: retention %+v", tc.name, r)
		case hold != (tc.c.LegalHold != nil && *tc.c.LegalHold):
			t.Errorf("%s: legal hold %v", tc.name, hold)
		}
	}
}
