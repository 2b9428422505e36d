package cli

import (
	"testing"

	"cairn"
)

// The gateway offers both tiers: WARM (raidp) always, COLD (and its
// alias GLACIER_IR) when a cold policy is set, and its policy check accepts codes, raidp and cold
// policies alike.
func TestStorageClassesBothTiers(t *testing.T) {
	const cold = "clay-4-2-5/gp=1MiB:2"
	c := coldClasses(cold)
	if c["WARM"] != cairn.RAIDPPolicy || c[ColdClass] != cold || c[ColdAlias] != cold || c["REDUCED_REDUNDANCY"] != "rs-4-1" {
		t.Fatalf("classes with a cold policy: %v", c)
	}
	if c := coldClasses(""); c["WARM"] != cairn.RAIDPPolicy || c[ColdClass] != "" || c[ColdAlias] != "" {
		t.Fatalf("classes without a cold policy: %v", c)
	}
	for _, p := range []string{"rs-4-2", cairn.RAIDPPolicy, cold} {
		if err := checkPolicy(p); err != nil {
			t.Errorf("checkPolicy(%q): %v", p, err)
		}
	}
	for _, p := range []string{"nope", "clay-4-2-5/gp=bad"} {
		if checkPolicy(p) == nil {
			t.Errorf("checkPolicy(%q) accepted", p)
		}
	}
}
