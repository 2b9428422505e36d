package etcdmeta_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"cairn"
	etcdmeta "cairn/meta/etcd"
)

// ObserveCall hears of every unary call by its short name, with its error.
func TestObserveCall(t *testing.T) {
	srv := startSingle(t, t.TempDir())
	var mu sync.Mutex
	calls, failed := map[string]int{}, map[string]int{}
	s, err := etcdmeta.Open(t.Context(), srv.Endpoints(), etcdmeta.Options{Prefix: "/observe/",
		ObserveCall: func(op string, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls[op]++
			if err != nil {
				failed[op]++
			}
			if took < 0 {
				t.Errorf("%s took %v", op, took)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-4-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-short.Done()
	if _, err := s.Bucket(short, "bkt"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past its deadline: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["Txn"] == 0 || calls["Range"] < 2 || failed["Range"] == 0 {
		t.Fatalf("calls %v, failed %v: want Txn (create), Ranges (reads) and one failed Range", calls, failed)
	}
}
