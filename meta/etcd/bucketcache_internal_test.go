package etcdmeta

import (
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The bucket cache's rules, one by one: what a read may keep, what the
// watch changes, and when nothing is served.
func TestBucketCacheRules(t *testing.T) {
	kv := func(v string, mod int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte("b/x"), Value: []byte(v), ModRevision: mod}
	}
	value := func(c *bucketCache) string {
		got, _ := c.get("b/x")
		if got == nil {
			return "-"
		}
		return string(got.Value)
	}
	event := func(typ mvccpb.Event_EventType, kv *mvccpb.KeyValue, rev int64) clientv3.WatchResponse {
		return clientv3.WatchResponse{Header: etcdserverpb.ResponseHeader{Revision: rev},
			Events: []*clientv3.Event{{Type: typ, Kv: kv}}}
	}
	tests := []struct {
		name string
		run  func(c *bucketCache)
		want string
	}{
		{"stopped: nothing kept", func(c *bucketCache) { c.stop(); c.put(kv("v", 11), 12, 0) }, "-"},
		{"a read is kept", func(c *bucketCache) { c.put(kv("v", 11), 12, 0) }, "v"},
		{"read below the floor", func(c *bucketCache) { c.put(kv("v", 5), 9, 0) }, "-"},
		{"read begun before a local write", func(c *bucketCache) {
			_, gen := c.get("b/x")
			c.forget("b/x")
			c.put(kv("old", 11), 12, gen)
		}, "-"},
		{"local write forgets", func(c *bucketCache) { c.put(kv("v", 11), 12, 0); c.forget("b/x") }, "-"},
		{"watch put updates", func(c *bucketCache) {
			c.put(kv("v", 11), 12, 0)
			c.apply(event(clientv3.EventTypePut, kv("w", 13), 13))
		}, "w"},
		{"watch delete drops", func(c *bucketCache) {
			c.put(kv("v", 11), 12, 0)
			c.apply(event(clientv3.EventTypeDelete, &mvccpb.KeyValue{Key: []byte("b/x"), ModRevision: 13}, 13))
		}, "-"},
		{"read older than a delivered delete", func(c *bucketCache) {
			c.apply(event(clientv3.EventTypeDelete, &mvccpb.KeyValue{Key: []byte("b/x"), ModRevision: 13}, 13))
			c.put(kv("v", 11), 12, 0)
		}, "-"},
		{"read older than a delivered change", func(c *bucketCache) {
			c.apply(event(clientv3.EventTypePut, kv("w", 13), 13))
			c.put(kv("v", 11), 12, 0)
		}, "-"},
		{"read after a delivered change", func(c *bucketCache) {
			c.apply(event(clientv3.EventTypePut, kv("w", 13), 13))
			c.put(kv("w", 13), 14, 0)
		}, "w"},
		{"an older read does not replace", func(c *bucketCache) {
			c.put(kv("w", 13), 14, 0)
			c.put(kv("v", 11), 12, 0)
		}, "w"},
		{"watch silent for longer than the bound", func(c *bucketCache) {
			c.put(kv("v", 11), 12, 0)
			c.mu.Lock()
			c.alive = time.Now().Add(-2 * time.Minute)
			c.mu.Unlock()
		}, "-"},
		{"a progress reply proves the watch current", func(c *bucketCache) {
			c.put(kv("v", 11), 12, 0)
			c.mu.Lock()
			c.alive = time.Now().Add(-2 * time.Minute)
			c.mu.Unlock()
			c.apply(clientv3.WatchResponse{Header: etcdserverpb.ResponseHeader{Revision: 20}})
		}, "v"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newBucketCache(time.Minute)
			c.start(10)
			tt.run(c)
			if got := value(c); got != tt.want {
				t.Fatalf("cached %q, want %q", got, tt.want)
			}
		})
	}
}
