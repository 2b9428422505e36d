package units

import "testing"

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "4096": 4096, "64KiB": 64 << 10, "1MiB": 1 << 20, "1mib": 1 << 20, "1.5GiB": 3 << 29,
		"2GB": 2e9, "1M": 1 << 20, "10B": 10, " 8 KiB ": 8 << 10,
	}
	for s, want := range good {
		got, err := ParseSize(s)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "MiB", "1.3B", "abc", "1XB", "1e30", "+5"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) succeeded", s)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1MiB", 64 << 10: "64KiB", 1000: "1000B", 0: "0B", 3 << 30: "3GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
