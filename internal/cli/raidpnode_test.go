package cli

import (
	"errors"
	"testing"
)

func TestSplitLstor(t *testing.T) {
	for spec, want := range map[string][2]string{
		"/d1":                       {"/d1", ""},
		"/d1,lstor=/l1":             {"/d1", "/l1"},
		"/d1,bw=1MiB,lstor=/l1":     {"/d1,bw=1MiB", "/l1"},
		"/d1,lstor=/l1,lat=2ms":     {"/d1,lat=2ms", "/l1"},
		"/data/disk1,lstor=/nv/d1/": {"/data/disk1", "/nv/d1/"},
	} {
		rest, l, err := splitLstor(spec)
		if err != nil || rest != want[0] || l != want[1] {
			t.Errorf("splitLstor(%q) = %q, %q, %v; want %q, %q", spec, rest, l, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"/d1,lstor=", "/d1,lstor=/l,lstor=/m", "/d1,lstor=/d1", "/d1,lstor=/d1/l", "/d1/x,lstor=/d1"} {
		if _, _, err := splitLstor(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("splitLstor(%q): %v, want ErrUsage", bad, err)
		}
	}
}
