package metrics

import (
	"io"
	"io/fs"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn"
	"cairn/internal/vfs"
)

// Names of the per-disk series (docs/metrics.md).
const (
	NameDiskReadBytes    = "cairn_disk_read_bytes_total"
	NameDiskWrittenBytes = "cairn_disk_written_bytes_total"
	NameDiskOps          = "cairn_disk_operations_total"
	NameDiskErrors       = "cairn_disk_errors_total"
	NameDiskSeconds      = "cairn_disk_operation_duration_seconds"
	NameDiskInFlight     = "cairn_disk_operations_in_flight"
)

// DiskLatencyBuckets are the buckets of the disk operation latency
// histogram, in seconds: 50 µs to about 3 s.
var DiskLatencyBuckets = prometheus.ExponentialBuckets(0.00005, 4, 9)

// Disk operations, the op label of the disk series, indexing opNames.
// Reads, writes and syncs are timed (the histogram); the rest are
// counted.
const (
	iRead   = iota
	iWrite  // Write, WriteAt
	iSync   // Sync of a file or a directory
	iOpen   // Create, Open, OpenReadWrite, OpenDir
	iRemove // Remove
	iRename
	iMkdir
	iList
	iStat // Stat of a path or of an open file, GetDiskUsage
	nOps
	nTimed = iSync + 1 // the ops below nTimed are timed
)

var opNames = [nOps]string{"read", "write", "sync", "open", "remove", "rename", "mkdir", "list", "stat"}

// Disks holds the series of the disks a node serves, fed by the vfs.FS
// decorator FS returns: bytes read and written, operations, errors and
// latency, per disk.
type Disks struct {
	read, written *prometheus.CounterVec   // disk
	ops, errs     *prometheus.CounterVec   // disk, op
	seconds       *prometheus.HistogramVec // disk, op
	inFlight      *prometheus.GaugeVec     // disk
}

// NewDisks registers the per-disk I/O series with reg.
func NewDisks(reg prometheus.Registerer) *Disks {
	d := &Disks{
		read: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameDiskReadBytes,
			Help: "Bytes read from a disk's files (shard data, footers, metadata)."}, []string{"disk"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameDiskWrittenBytes,
			Help: "Bytes written to a disk's files."}, []string{"disk"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameDiskOps,
			Help: "File system operations on a disk, by op: read, write, sync, open, remove, rename, mkdir, list, stat."},
			[]string{"disk", "op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameDiskErrors,
			Help: "File system operations on a disk that failed, by op (a missing file that was looked for counts too; end of file does not)."},
			[]string{"disk", "op"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameDiskSeconds,
			Help: "Latency of a disk's reads, writes and syncs.", Buckets: DiskLatencyBuckets}, []string{"disk", "op"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameDiskInFlight,
			Help: "Reads, writes and syncs under way on a disk now: its queue depth as the node sees it."}, []string{"disk"}),
	}
	reg.MustRegister(d.read, d.written, d.ops, d.errs, d.seconds, d.inFlight)
	return d
}

// FS returns fsys with every operation counted under disk. Files it opens
// keep vfs.WriterAt when fsys's do, and vfs.StartWriteback reaches the
// file underneath (Unwrap).
func (d *Disks) FS(disk cairn.DiskID, fsys vfs.FS) vfs.FS {
	id := string(disk)
	m := &diskMetrics{read: d.read.WithLabelValues(id), written: d.written.WithLabelValues(id), inFlight: d.inFlight.WithLabelValues(id)}
	for i, op := range opNames {
		m.op[i] = opMetrics{ops: d.ops.WithLabelValues(id, op), errs: d.errs.WithLabelValues(id, op)}
		if i < nTimed {
			m.op[i].seconds = d.seconds.WithLabelValues(id, op)
		}
	}
	return &countedFS{FS: fsys, m: m}
}

// diskMetrics are one disk's series, resolved once so that an operation
// costs no label lookup.
type diskMetrics struct {
	read, written prometheus.Counter
	inFlight      prometheus.Gauge
	op            [nOps]opMetrics // by op index (iRead, ...)
}

type opMetrics struct {
	ops, errs prometheus.Counter
	seconds   prometheus.Observer // nil: not timed
}

// begin starts a timed operation: it is in flight until done.
func (m *diskMetrics) begin() time.Time {
	m.inFlight.Inc()
	return time.Now()
}

// done counts one operation op that ended with err; a timed one (op
// below nTimed) started at start, by begin.
func (m *diskMetrics) done(op int, start time.Time, err error) {
	o := &m.op[op]
	o.ops.Inc()
	if err != nil && err != io.EOF {
		o.errs.Inc()
	}
	if o.seconds != nil {
		m.inFlight.Dec()
		o.seconds.Observe(time.Since(start).Seconds())
	}
}

// wrote counts a write of n bytes that started at start and ended with
// err, and returns n and err.
func (m *diskMetrics) wrote(start time.Time, n int, err error) (int, error) {
	m.written.Add(float64(n))
	m.done(iWrite, start, err)
	return n, err
}

type countedFS struct {
	vfs.FS
	m *diskMetrics
}

var _ vfs.FS = (*countedFS)(nil)

func (c *countedFS) wrap(f vfs.File, err error) (vfs.File, error) {
	c.m.done(iOpen, time.Time{}, err)
	if err != nil {
		return nil, err
	}
	cf := &countedFile{File: f, m: c.m}
	if wa, ok := f.(vfs.WriterAt); ok {
		return &countedFileAt{countedFile: cf, at: wa}, nil
	}
	return cf, nil
}

func (c *countedFS) Create(name string) (vfs.File, error) { return c.wrap(c.FS.Create(name)) }
func (c *countedFS) Open(name string) (vfs.File, error)   { return c.wrap(c.FS.Open(name)) }
func (c *countedFS) OpenReadWrite(name string) (vfs.File, error) {
	return c.wrap(c.FS.OpenReadWrite(name))
}
func (c *countedFS) OpenDir(name string) (vfs.File, error) { return c.wrap(c.FS.OpenDir(name)) }

func (c *countedFS) Remove(name string) error {
	err := c.FS.Remove(name)
	c.m.done(iRemove, time.Time{}, err)
	return err
}

func (c *countedFS) Rename(oldname, newname string) error {
	err := c.FS.Rename(oldname, newname)
	c.m.done(iRename, time.Time{}, err)
	return err
}

func (c *countedFS) MkdirAll(dir string, perm fs.FileMode) error {
	err := c.FS.MkdirAll(dir, perm)
	c.m.done(iMkdir, time.Time{}, err)
	return err
}

func (c *countedFS) List(dir string) ([]string, error) {
	names, err := c.FS.List(dir)
	c.m.done(iList, time.Time{}, err)
	return names, err
}

func (c *countedFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := c.FS.Stat(name)
	c.m.done(iStat, time.Time{}, err)
	return fi, err
}

func (c *countedFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	u, err := c.FS.GetDiskUsage(path)
	c.m.done(iStat, time.Time{}, err)
	return u, err
}

// countedFile counts a file's reads, writes and syncs. Like the File it
// wraps, ReadAt is safe for concurrent use (the counters are atomic).
type countedFile struct {
	vfs.File
	m *diskMetrics
}

func (f *countedFile) Write(p []byte) (int, error) {
	start := f.m.begin()
	n, err := f.File.Write(p)
	return f.m.wrote(start, n, err)
}

func (f *countedFile) ReadAt(p []byte, off int64) (int, error) {
	start := f.m.begin()
	n, err := f.File.ReadAt(p, off)
	f.m.read.Add(float64(n))
	f.m.done(iRead, start, err)
	return n, err
}

func (f *countedFile) Sync() error {
	start := f.m.begin()
	err := f.File.Sync()
	f.m.done(iSync, start, err)
	return err
}

func (f *countedFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	f.m.done(iStat, time.Time{}, err)
	return fi, err
}

// Unwrap returns the file underneath (vfs.StartWriteback).
func (f *countedFile) Unwrap() vfs.File { return f.File }

// countedFileAt is a countedFile over a file with vfs.WriterAt.
type countedFileAt struct {
	*countedFile
	at vfs.WriterAt
}

var _ vfs.WriterAt = (*countedFileAt)(nil)

func (f *countedFileAt) WriteAt(p []byte, off int64) (int, error) {
	start := f.m.begin()
	n, err := f.at.WriteAt(p, off)
	return f.m.wrote(start, n, err)
}
