package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"cairn"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/meta"
)

// The cold tier (docs/design/cold.md): a PUT of a cold policy stores the
// object with Config.ColdStaging and commits it staged (its Policy the
// cold one, its Layout.Code the warm one) after queueing it for the export
// job; a GET of an exported object (Manifest.Cold) reads its group's
// slots through package cold.

// coldMeta is what the cold tier needs of the metadata store beyond Meta;
// meta.Store has it.
type coldMeta interface {
	ColdGet(ctx context.Context, key string) ([]byte, error)
	ColdPage(ctx context.Context, prefix, after string, limit int) ([]meta.ColdRecord, bool, error)
	ColdUpdate(ctx context.Context, ops []meta.ColdOp) error
}

// staging splits a PUT's policy: a cold policy is checked and returned
// as cold, with the warm policy to store the object with; any other comes
// back as warm.
func (c *Client) staging(policy string) (coldPolicy, warm string, err error) {
	if !cairn.IsColdPolicy(policy) {
		return "", policy, nil
	}
	p, err := gp.ParsePolicy(policy)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", cairn.ErrInvalid, err)
	}
	if _, ok := c.direct.(coldMeta); !ok {
		return "", "", fmt.Errorf("%w: policy %s: the metadata store has no cold tier", cairn.ErrInvalid, policy)
	}
	return p.String(), c.cfg.ColdStaging, nil
}

// stage makes m, stored with its warm policy, a staged object of
// coldPolicy ("" = not cold: nothing to do) and queues it for the export
// job, before m commits: every committed staged object has its queue
// record (a record whose commit fails is dropped by the job).
func (c *Client) stage(ctx context.Context, m *cairn.Manifest, coldPolicy string, now time.Time) error {
	if coldPolicy == "" {
		return nil
	}
	cm, ok := c.direct.(coldMeta) // staging checked it, maybe in another client (an upload's)
	if !ok {
		return fmt.Errorf("%w: policy %s: the metadata store has no cold tier", cairn.ErrInvalid, coldPolicy)
	}
	m.Code, m.Policy = m.LayoutCode(), coldPolicy
	op, err := cold.StageOp(m, now)
	if err != nil {
		return err
	}
	return cm.ColdUpdate(ctx, []meta.ColdOp{op})
}

// OpenStored reads bytes [off, off+length) (length < 0: to the end) of
// the stored bytes of the object version m — the ciphertext of an
// encrypted object, undecrypted: the export job copies a staged object's
// warm bytes with it.
func (c *Client) OpenStored(ctx context.Context, m *cairn.Manifest, off, length int64) (io.ReadCloser, error) {
	_, rc, err := c.open(ctx, m, off, length)
	return rc, err
}

// coldGroups caches the cold groups' states a client reads through
// (their disks and geometry; the allocation is the export job's).
type coldGroups struct {
	mu sync.Mutex
	m  map[string]coldGroup // guarded by mu
}

type coldGroup struct {
	st *cold.State
	at time.Time
}

// coldGroupMaxAge bounds how stale a cached group's disks may be (a
// rebuild moves a disk of a group).
const coldGroupMaxAge = 5 * time.Second

// coldGroup returns the state of cold group id.
func (c *Client) coldGroup(ctx context.Context, id string) (*cold.State, error) {
	cm, ok := c.direct.(coldMeta)
	if !ok {
		return nil, fmt.Errorf("%w: a cold object, and the metadata store has no cold tier", cairn.ErrInvalid)
	}
	c.cold.mu.Lock()
	g, ok := c.cold.m[id]
	c.cold.mu.Unlock()
	if ok && time.Since(g.at) < coldGroupMaxAge {
		return g.st, nil
	}
	return c.loadColdGroup(ctx, cm, id)
}

// loadColdGroup loads the state of cold group id from the metadata store
// and caches it.
func (c *Client) loadColdGroup(ctx context.Context, cm coldMeta, id string) (*cold.State, error) {
	st, err := cold.LoadState(ctx, cm, id, c.shards)
	if err != nil {
		return nil, err
	}
	c.cold.mu.Lock()
	if c.cold.m == nil {
		c.cold.m = map[string]coldGroup{}
	}
	c.cold.m[id] = coldGroup{st: st, at: time.Now()}
	c.cold.mu.Unlock()
	return st, nil
}

// openCold reads bytes [off, end) of an exported object: from its disk,
// or, when that fails for a reason other than bad data, by rebuilding
// its pieces from the group's disks that answer (cold.Group.Read's
// degraded read).
func (c *Client) openCold(ctx context.Context, m *cairn.Manifest, off, end int64) (io.ReadCloser, error) {
	st, err := c.coldGroup(ctx, m.Cold.Group)
	if err != nil {
		return nil, err
	}
	rec, err := gp.DecodeRecord(m.Cold.Record, st.PG.Geo)
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %v", cairn.ErrCorrupt, m.Bucket, m.Key, err)
	}
	if rec.Size != m.Size {
		return nil, fmt.Errorf("%w: %s/%s: a cold record of %d bytes for a %d-byte object", cairn.ErrCorrupt, m.Bucket, m.Key, rec.Size, m.Size)
	}
	// The read holds up to three pieces at once (one rebuilt or read,
	// one waiting, one being written): under the GET memory budget.
	locs, err := st.PG.Pieces(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %v", cairn.ErrCorrupt, m.Bucket, m.Key, err)
	}
	var largest int64
	for _, l := range locs {
		largest = max(largest, l.Length)
	}
	release, err := c.cfg.Memory.take(ctx, min(3*largest, m.Size))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		defer release()
		pw.CloseWithError(c.readCold(ctx, st, rec, off, end-off, pw))
	}()
	return &coldReader{PipeReader: pr, cancel: cancel}, nil
}

// coldReader is the reading end of a cold read; Close stops the read.
type coldReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *coldReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// readCold writes the range to w: from the object's disk when the map
// holds it readable; else, or if that disk fails before the first byte,
// degraded — through the group's current disks (a rebuild may have put a
// spare in the lost disk's place since st was cached: once an export has
// changed rows on the spare, a read rebuilt through the old disks fails
// part way) and only the helpers that still hold their data (a disk wiped
// or replaced may be up in the map for a while, and its slots, read as
// never written, would rebuild wrong bytes part way through). A failure
// after bytes were written ends the read (the caller's reader reports it).
func (c *Client) readCold(ctx context.Context, st *cold.State, rec gp.Record, off, n int64, w io.Writer) error {
	avail := c.coldAvailable(ctx, st)
	var failed cairn.DiskID // the object's disk, if it failed to serve
	if avail[rec.Disk] {
		cw := &countWriter{w: w}
		err := st.Read(ctx, rec, off, n, avail, cw)
		if err == nil || cw.n > 0 || ctx.Err() != nil {
			return err
		}
		failed = st.Disks[rec.Disk]
	}
	if fresh := c.freshCold(ctx, st); fresh != st {
		st, avail = fresh, c.coldAvailable(ctx, fresh)
	}
	avail = c.probeCold(ctx, st, avail)
	if st.Disks[rec.Disk] == failed {
		avail[rec.Disk] = false
	}
	return st.Read(ctx, rec, off, n, avail, w)
}

// freshCold returns the stored state of group st if its disks moved since
// st was cached (and caches it), else st. Asking costs one read of the
// group's header.
func (c *Client) freshCold(ctx context.Context, st *cold.State) *cold.State {
	cm, ok := c.direct.(coldMeta)
	if !ok {
		return st
	}
	disks, err := cold.LoadDisks(ctx, cm, st.ID)
	if err != nil || slices.Equal(disks, st.Disks) {
		return st
	}
	fresh, err := c.loadColdGroup(ctx, cm, st.ID)
	if err != nil {
		return st
	}
	return fresh
}

// coldAvailable returns which disks of a group the cluster map holds
// readable.
func (c *Client) coldAvailable(ctx context.Context, st *cold.State) []bool {
	avail := make([]bool, len(st.Disks))
	readable := map[cairn.DiskID]bool{}
	disks, err := c.meta.Disks(ctx)
	for _, d := range disks {
		readable[d.ID] = d.State.Readable()
	}
	for i, d := range st.Disks {
		avail[i] = err != nil || readable[d]
	}
	return avail
}

// probeCold asks the disks of a group that among marks for their witness
// (cold.Group.Witness), a shard each must hold, at once: the disks that
// serve it are available; so are the disks that must hold nothing yet and
// answer "not found" for it. The others are not.
func (c *Client) probeCold(ctx context.Context, st *cold.State, among []bool) []bool {
	avail := make([]bool, len(st.Disks))
	var wg sync.WaitGroup
	for i, d := range st.Disks {
		if !among[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			name, must := st.Witness(i)
			if !must {
				name = cairn.ShardName("00000000000000000000000000000000", 0)
			}
			rc, err := c.shards.GetShard(pctx, d, name, 0, 1)
			if err == nil {
				rc.Close()
			}
			avail[i] = err == nil || !must && errors.Is(err, cairn.ErrNotFound)
		}()
	}
	wg.Wait()
	return avail
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ColdGroupDisks returns the disks for cold group n of policy p: the
// placement group n (mod the table's size) of the width K+M table, in the
// order the client would put a stripe of clay-K-M-D on it (so that the
// group survives as many node losses as the table allows). The export job
// calls it once per group, when the group is first used.
func (c *Client) ColdGroupDisks(ctx context.Context, p gp.Policy, n int) ([]cairn.DiskID, error) {
	code, err := c.code(p.Code.String())
	if err != nil {
		return nil, err
	}
	t, err := c.table(ctx, code.Params().N())
	if err != nil {
		return nil, err
	}
	if len(t.PGs) == 0 {
		return nil, fmt.Errorf("%w: no placement groups of width %d", cairn.ErrUnavailable, t.Width)
	}
	return c.arrange(ctx, p.Code.String(), code, t.PGs[n%len(t.PGs)])
}
