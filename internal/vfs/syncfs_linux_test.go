package vfs

import "testing"

func TestKernelAtLeast(t *testing.T) {
	tests := []struct {
		release string
		want    bool
	}{
		{"5.8.0", true},
		{"5.8-rc1", true},
		{"5.7.19-generic", false},
		{"6.1.0-18-amd64", true},
		{"4.19.0", false},
		{"10.0", true},
		{"5", false},
		{"x.y", false},
	}
	for _, tt := range tests {
		if got := kernelAtLeast(tt.release, 5, 8); got != tt.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", tt.release, got, tt.want)
		}
	}
}
