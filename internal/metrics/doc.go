// Package metrics exposes what a cairn process does as Prometheus metrics
// (docs/metrics.md lists every series).
//
// Vocabulary:
//
//   - Registry: each process makes one with NewRegistry (never the global
//     default registry), so that tests running several nodes in one process
//     keep their series apart. It holds the Go runtime and process
//     collectors; the services' collectors are added by the process's
//     wiring (internal/cli), and Mux (on --metrics-addr) or Beside (on the
//     S3 port) expose it at /metrics.
//   - Series names follow Prometheus conventions: cairn_<subsystem>_<name>
//     with a unit suffix (_bytes, _seconds) and _total for counters. Label
//     values are few and fixed: an S3 operation name (s3.Operation), an
//     HTTP status code, a disk ID, a risk level, a repair scheme. A bucket
//     name, object key or upload ID never becomes a label value, so the
//     exposition shows no bucket or object data and needs no
//     authentication (docs/metrics.md, "Access").
//   - Decorators feed the series without the services knowing Prometheus:
//     S3.Wrap wraps the S3 http.Handler; Disks.FS wraps a disk's vfs.FS;
//     Meta.Observe is a metadata store's etcdmeta.Options.ObserveCall.
//   - Setters: what only the director reads on its own schedule (the
//     repair queue, the cluster map's disk states) is set by its duty
//     (Repair.SetQueue, Cluster.SetDisks) and read back by scrapes; a
//     cleanup run's counts are added (Cleanup.Add).
//   - Reports: what a service already counts (repair.Stats, a node's
//     volumes, the client's counters, scrub progress) is read when
//     Prometheus scrapes, through a func the wiring provides that returns a
//     plain report struct of this package (DiskReport, RepairReport,
//     ClientReport). The services stay free of this package, and a scrape
//     reads the live values, never a copy that could go stale.
//   - Names: the constants Name* name the series other packages (the web
//     console's throughput graphs) read back from a registry's Gather.
//
// Usage sketch (internal/cli):
//
//	reg := metrics.NewRegistry()
//	h := metrics.NewS3(reg).Wrap(s3Handler, s3.Operation)
//	fs := metrics.NewDisks(reg).FS("node1/disk1", vfs.Default)
//	metrics.RegisterDisks(reg, func() []metrics.DiskReport { ... })
//	http.Serve(ln, metrics.Mux(reg, log))
//
// The page: Mux serves a registry at Path (/metrics) and, apart, the
// client library's global registry at EtcdPath (/metrics/etcd: an
// embedded etcd server's own series, which do not all follow the naming
// rules /metrics keeps); Beside serves Path on the S3 port.
//
// Caveats: counters start at zero with the process (Prometheus' rate()
// handles the reset). A report func runs at every scrape under the
// scrape's deadline: it must be cheap and must not block on the network.
// The repair queue gauges are the exception that proves the rule: the
// director counts the queue on its own schedule and sets them
// (Repair.SetQueue), and a scrape only reads what it last counted.
package metrics
