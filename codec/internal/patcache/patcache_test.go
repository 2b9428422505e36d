package patcache

import (
	"errors"
	"testing"
)

func TestCache(t *testing.T) {
	c := New[int](2)
	builds := 0
	build := func(v int) func() (int, error) { return func() (int, error) { builds++; return v, nil } }
	if v, _ := c.Get(Key([]int{1, 2}, []int{3}), build(7)); v != 7 {
		t.Fatal(v)
	}
	if v, _ := c.Get(Key([]int{1, 2}, []int{3}), build(8)); v != 7 || builds != 1 {
		t.Fatalf("cached value %d after %d builds", v, builds)
	}
	if Key([]int{1, 2}, []int{3}) == Key([]int{1}, []int{2, 3}) || Key([]int{12}) == Key([]int{1, 2}) {
		t.Fatal("distinct patterns share a key")
	}
	boom := errors.New("boom")
	if _, err := c.Get("x", func() (int, error) { return 0, boom }); err != boom {
		t.Fatal(err)
	}
	c.Get("a", build(1))
	c.Get("b", build(2)) // full: emptied first
	if len(c.m) > 2 {
		t.Fatalf("%d entries, max 2", len(c.m))
	}
}
