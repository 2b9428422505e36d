// Package mem is an in-memory meta.Store for unit tests and the simulator.
// It passes metatest, so code tested against it behaves the same on etcd.
//
// Everything lives in maps guarded by one mutex; a bucket's manifests are
// kept in a B-tree ordered by key, so ListManifests pages in O(log n + page).
// Values are copied in and out: callers never share memory with the store.
//
// Time: lease expiry is judged by the store's clock (WithClock), so a test
// can expire a liveness entry by moving a fake clock instead of sleeping:
//
//	s := mem.New(mem.WithClock(clk.Now)) // clk: the test's fake clock
//	ctx, stop := context.WithCancel(ctx)
//	s.KeepAlive(ctx, "node1", 10*time.Second)
//	stop()                     // the holder stops renewing
//	s.Alive(ctx)               // still lists node1
//	clk.Advance(10 * time.Second)
//	s.Alive(ctx)               // no longer does
//
// A renewing entry never expires (renewal is modelled as perfect); once its
// ctx ends, or at Close, it lives exactly ttl longer by the clock, counted
// from when the store first notices (the ctx's AfterFunc, or an Alive call,
// whichever runs first).
//
// Elections: Campaign blocks on a channel until the leader resigns (or the
// store closes); campaigners win in the order they started.
//
// Caveats: there is no session to lose, so a Leadership ends only by
// Resign or Close; nothing is persisted.
package mem
