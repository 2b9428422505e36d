package etcdtest

import (
	"testing"

	etcdmeta "cairn/meta/etcd"
)

// Store starts an embedded etcd member in a temporary directory on
// loopback ports the kernel picks and returns a store on it opened with
// opts; both are closed at the end of the test.
func Store(t testing.TB, opts etcdmeta.Options) *etcdmeta.Store {
	t.Helper()
	srv, err := etcdmeta.StartEmbedded(t.Context(), etcdmeta.EmbedConfig{
		Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0",
		TickMs: 50, ElectionMs: 500, UnsafeNoFsync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	store, err := etcdmeta.Open(t.Context(), srv.Endpoints(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
