// Package units parses and prints byte sizes the way operators write them:
// "4096", "64KiB", "1MiB", "1.5GiB", and the decimal "1MB" = 10^6.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

var suffixes = []struct {
	s string
	n float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a non-negative byte size with an optional unit suffix
// (case-insensitive): KiB/MiB/GiB/TiB and K/M/G/T are powers of 1024,
// KB/MB/GB/TB powers of 1000, B or none is bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, suf := range suffixes {
		if len(t) > len(suf.s) && strings.EqualFold(t[len(t)-len(suf.s):], suf.s) {
			mult = suf.n
			t = strings.TrimSpace(t[:len(t)-len(suf.s)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<62 || t != strings.TrimLeft(t, "+") {
		return 0, fmt.Errorf("invalid size %q (want e.g. 4096, 64KiB, 1MiB, 2GB)", s)
	}
	n := v * mult
	if n != float64(int64(n)) {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
	}
	return int64(n), nil
}

// FormatSize prints n with the largest binary unit that divides it, e.g.
// 1048576 → "1MiB", 1000 → "1000B".
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// FormatRate prints bytes per second in decimal units, e.g. "4.52 GB/s".
func FormatRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f MB/s", bps/1e6)
	}
	return fmt.Sprintf("%.0f B/s", bps)
}
