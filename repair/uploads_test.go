package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/meta/etcd/etcdtest"
	"cairn/meta/mem"
)

// The parts of multipart uploads in progress are stripes like any other
// (docs/design/repair.md, "Parts of uploads in progress"): these tests
// run on meta/mem and on a real embedded etcd member.

// forStores runs f on a fresh meta/mem store and on a fresh store of a
// real single-member etcd (its own member per call, each store on its own
// prefix).
func forStores(t *testing.T, f func(t *testing.T, store meta.Store)) {
	t.Run("mem", func(t *testing.T) { f(t, mem.New()) })
	t.Run("etcd", func(t *testing.T) {
		s := etcdtest.Store(t, etcdmeta.Options{Prefix: "/repair/", CallTimeout: time.Minute})
		f(t, s)
	})
}

// openUpload is an upload in progress a test made, with its parts'
// contents by number, and as it was once its parts were uploaded: its
// record, its parts, and a copy of every shard file (env.snapshot).
type openUpload struct {
	key    string
	id     string
	parts  map[int][]byte
	etags  map[int]string
	u      cairn.Upload
	before []cairn.Part
	snap   map[string][]byte
}

// startUpload starts an upload of key and uploads parts 1..n, each of
// about 20 KB (several stripes of the env's 4 KiB blocks), and notes the
// upload as it is then.
func (e *env) startUpload(t *testing.T, key string, n int) *openUpload {
	t.Helper()
	ctx := context.Background()
	e.c = client.New(e.meta, e.files, client.Config{BlockSize: 4096, MinPartSize: 1})
	u, err := e.c.CreateUpload(ctx, "bkt", key, client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	up := &openUpload{key: key, id: u.ID, parts: map[int][]byte{}, etags: map[int]string{}, u: u}
	for i := 1; i <= n; i++ {
		e.uploadPart(t, up, i, randBytes(uint64(7*i), 20000+i))
	}
	up.before, up.snap = e.parts(t, up), e.snapshot()
	return up
}

// uploadPart uploads b as part n of up.
func (e *env) uploadPart(t *testing.T, up *openUpload, n int, b []byte) cairn.Part {
	t.Helper()
	p, err := e.c.UploadPart(context.Background(), "bkt", up.key, up.id, n, bytes.NewReader(b), client.PutOptions{Size: int64(len(b))})
	if err != nil {
		t.Fatal(err)
	}
	up.parts[n], up.etags[n] = b, p.ETag
	return p
}

// complete completes up with all its parts, in number order, and returns
// the object's content.
func (e *env) complete(t *testing.T, up *openUpload) []byte {
	t.Helper()
	var all []byte
	var list []client.CompletePart
	for n := 1; n <= len(up.parts); n++ {
		all = append(all, up.parts[n]...)
		list = append(list, client.CompletePart{Number: n, ETag: up.etags[n]})
	}
	if _, err := e.c.CompleteUpload(context.Background(), "bkt", up.key, up.id, list); err != nil {
		t.Fatal(err)
	}
	return all
}

// readBack checks that key reads back as want, byte for byte.
func (e *env) readBack(t *testing.T, key string, want []byte) {
	t.Helper()
	_, rc, err := e.c.Get(context.Background(), "bkt", key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	rc.Close()
	if err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("%s read back %d bytes (%v), want %d, differing", key, buf.Len(), err, len(want))
	}
}

// parts returns the parts of an upload in progress.
func (e *env) parts(t *testing.T, up *openUpload) []cairn.Part {
	t.Helper()
	ps, _, err := e.meta.Parts(context.Background(), "bkt", up.id)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// snapshot copies every shard file's content, by "disk/name".
func (e *env) snapshot() map[string][]byte {
	e.files.Mu.Lock()
	defer e.files.Mu.Unlock()
	out := make(map[string][]byte, len(e.files.Files))
	for k, b := range e.files.Files {
		out[k] = bytes.Clone(b)
	}
	return out
}

// checkMoved checks every shard of parts against the parts as uploaded
// (before): none is on a disk of lost (a prefix of disk IDs), and each
// one that moved is a file with the very bytes the lost file had and the
// identity of the upload's part (u: the upload, for it). It returns how
// many shards moved.
func (e *env) checkMoved(t *testing.T, u cairn.Upload, before, parts []cairn.Part, snap map[string][]byte, lost string) int {
	t.Helper()
	moved := 0
	for k, p := range parts {
		if p.Version != before[k].Version {
			t.Fatalf("part %d is version %s, was %s", p.Number, p.Version, before[k].Version)
		}
		for i, s := range p.Shards {
			if strings.HasPrefix(string(s.Disk), lost) {
				t.Fatalf("part %d shard %d still on %s", p.Number, i, s.Disk)
			}
			was := before[k].Shards[i].Disk
			if s.Disk == was {
				continue
			}
			moved++
			name := cairn.ShardName(p.Version, cairn.RowOf(p.Shards, i))
			e.files.Mu.Lock()
			got := e.files.Files[string(s.Disk)+"/"+name]
			e.files.Mu.Unlock()
			if want := snap[string(was)+"/"+name]; want == nil || !bytes.Equal(got, want) {
				t.Fatalf("part %d shard %d rebuilt on %s: %d bytes, differing from the %d bytes lost on %s", p.Number, i, s.Disk, len(got), len(want), was)
			}
			e.checkIdentity(t, u.OpenPart(p), p.Number, cairn.RowOf(p.Shards, i), s)
		}
	}
	return moved
}

// onNode returns the parts of ps with a shard on node (a disk ID prefix).
func onNode(ps []cairn.Part, node string) int {
	n := 0
	for _, p := range ps {
		for _, s := range p.Shards {
			if strings.HasPrefix(string(s.Disk), node) {
				n++
				break
			}
		}
	}
	return n
}

// TestRepairUploadParts: a node is lost while an upload holds parts on
// it; the scan queues a task per part that lost a shard (naming the
// upload), the repair rebuilds each lost shard byte-exact with the part's
// identity and moves it in the upload's part record; the census then
// counts no shard on the lost disks; the upload completes with the
// rebuilt shards' places and reads back byte-exact.
func TestRepairUploadParts(t *testing.T) {
	forStores(t, func(t *testing.T, store meta.Store) {
		ctx := context.Background()
		e := newEnvStore(t, store, 7, 2, "rs-4-2", 3)
		up := e.startUpload(t, "big", 6)
		u, before, snap := up.u, up.before, up.snap
		e.loseNode(t, "n4")
		want := onNode(before, "n4/")
		if want == 0 {
			t.Fatal("no part has a shard on n4: the test tests nothing")
		}
		r := New(e.meta, e.exec, Config{Unit: 4096})
		now := time.Unix(1000, 0)
		if _, err := r.Scan(ctx, now); err != nil {
			t.Fatal(err)
		}
		ts, err := meta.AllRepairTasks(ctx, e.meta)
		if err != nil {
			t.Fatal(err)
		}
		uploadTasks := 0
		for _, task := range ts {
			if task.Upload == "" {
				continue
			}
			uploadTasks++
			if task.Upload != up.id || task.Key != "big" || task.Version != "" || task.Part < 1 ||
				task.ID != cairn.UploadRepairTaskID("bkt", up.id, task.Part, task.Stripe) {
				t.Fatalf("task of an upload's part: %+v", task)
			}
		}
		if uploadTasks != want {
			t.Fatalf("%d tasks of the upload's parts, want %d (parts with a shard on n4)", uploadTasks, want)
		}
		drain(t, r, e.meta)
		after := e.parts(t, up)
		if moved := e.checkMoved(t, u, before, after, snap, "n4/"); moved != want {
			t.Fatalf("%d shards moved, want %d", moved, want)
		}
		// The census of a walk after the repair counts nothing on n4.
		if _, err := r.Scan(ctx, now.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		for d, n := range r.Census().Refs {
			if strings.HasPrefix(string(d), "n4/") && n > 0 {
				t.Fatalf("census: %d shards on %s after the repair", n, d)
			}
		}
		e.check(t) // the objects
		all := e.complete(t, up)
		m, err := e.meta.Manifest(ctx, "bkt", "big")
		if err != nil {
			t.Fatal(err)
		}
		for k := range m.Parts {
			if fmt.Sprint(m.Parts[k].Shards) != fmt.Sprint(after[k].Shards) {
				t.Fatalf("completed part %d: shards %v, the upload's were %v", m.Parts[k].Number, m.Parts[k].Shards, after[k].Shards)
			}
		}
		e.readBack(t, "big", all)
	})
}

// TestDrainMovesUploadParts: a disk drains while an upload holds parts
// on it: the drain moves them off (it need not wait for the upload to
// end), and the census finds the disk empty.
func TestDrainMovesUploadParts(t *testing.T) {
	forStores(t, func(t *testing.T, store meta.Store) {
		ctx := context.Background()
		e := newEnvStore(t, store, 7, 2, "rs-4-2", 0)
		up := e.startUpload(t, "big", 4)
		u, before, snap := up.u, up.before, up.snap
		disk := before[0].Shards[2].Disk
		e.setState(t, string(disk), cairn.DiskDraining)
		r := New(e.meta, e.exec, Config{Unit: 4096})
		drain(t, r, e.meta)
		if _, err := r.Scan(ctx, time.Unix(1000, 0).Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		c := r.Census()
		if c.At.IsZero() || c.Refs[disk] != 0 {
			t.Fatalf("census after the drain: %v (at %v), want none on %s", c.Refs, c.At, disk)
		}
		if moved := e.checkMoved(t, u, before, e.parts(t, up), snap, string(disk)); moved != onNode(before, string(disk)) {
			t.Fatalf("%d shards moved off %s, want %d", moved, disk, onNode(before, string(disk)))
		}
		e.readBack(t, "big", e.complete(t, up))
	})
}

// TestUploadRepairRaces: the upload changes while a repair of one of its
// parts runs (after the task chose its targets, before the rebuilt shard
// is recorded). The repair must neither resurrect nor clobber anything:
//   - aborted: the task is dropped; nothing names the rebuilt file, and
//     no part or usage is left;
//   - the part uploaded again: the task is dropped, the new part stays as
//     uploaded, and the rebuilt file of the old one is queued for deletion;
//   - completed: the task is dropped, the object names the shard where it
//     was; the next scan queues the object's part, which is repaired.
func TestUploadRepairRaces(t *testing.T) {
	for _, race := range []string{"abort", "reupload", "complete"} {
		t.Run(race, func(t *testing.T) {
			forStores(t, func(t *testing.T, store meta.Store) {
				ctx := context.Background()
				key := "race-" + race
				e := newEnvStore(t, store, 7, 2, "rs-4-2", 0)
				up := e.startUpload(t, key, 1)
				u, before, snap := up.u, up.before, up.snap
				lost := string(before[0].Shards[1].Disk)
				node, _, _ := strings.Cut(lost, "/")
				e.loseNode(t, node)
				r := New(e.meta, e.exec, Config{Unit: 4096, Parallel: 1})
				now := time.Unix(1000, 0)
				if n, err := r.Scan(ctx, now); err != nil || n != 1 {
					t.Fatalf("scan: %d tasks, %v", n, err)
				}
				var hooked atomic.Bool
				var reup cairn.Part
				fresh := randBytes(99, 17000)
				e.exec.mu.Lock()
				e.exec.onRun = func() {
					hooked.Store(true)
					switch race {
					case "abort":
						if err := e.c.AbortUpload(ctx, "bkt", key, up.id); err != nil {
							t.Error(err)
						}
					case "reupload":
						reup = e.uploadPart(t, up, 1, fresh)
					case "complete":
						e.complete(t, up)
					}
				}
				e.exec.mu.Unlock()
				if _, err := r.Work(ctx, now); err != nil {
					t.Fatal(err)
				}
				if !hooked.Load() {
					t.Fatal("the repair never ran")
				}
				if st := r.Stats(); st.Dropped != 1 || st.Repaired != 0 {
					t.Fatalf("stats %+v, want the task dropped", st)
				}
				ts, _ := meta.AllRepairTasks(ctx, e.meta)
				if len(ts) != 0 {
					t.Fatalf("tasks left: %+v", ts)
				}
				switch race {
				case "abort":
					if _, err := e.meta.Upload(ctx, "bkt", up.id); !errors.Is(err, cairn.ErrNotFound) {
						t.Fatalf("the aborted upload: %v", err)
					}
					usage, err := e.meta.Usage(ctx)
					if err != nil {
						t.Fatal(err)
					}
					for d, tally := range usage.Disks {
						if tally.Files != 0 {
							t.Fatalf("disk %s counts %+v after the abort", d, tally)
						}
					}
				case "reupload":
					ps := e.parts(t, up)
					if len(ps) != 1 || fmt.Sprint(ps[0]) != fmt.Sprint(reup) {
						t.Fatalf("part after the race: %+v, uploaded %+v", ps, reup)
					}
					e.checkCleanup(t, key, before[0].Version)
					drain(t, r, e.meta)
					e.readBack(t, key, e.complete(t, up))
				case "complete":
					m, err := e.meta.Manifest(ctx, "bkt", key)
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(m.Parts[0].Shards) != fmt.Sprint(before[0].Shards) {
						t.Fatalf("completed part: %v, the upload's part was %v", m.Parts[0].Shards, before[0].Shards)
					}
					// The lost disks are the same, and the next walk is
					// rescanEvery after the last.
					later := now.Add(rescanEvery)
					if n, err := r.Scan(ctx, later); err != nil || n != 1 {
						t.Fatalf("scan after the completion: %d tasks, %v", n, err)
					}
					if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 1 || ts[0].Upload != "" || ts[0].Version != m.Version {
						t.Fatalf("tasks after the completion: %+v", ts)
					}
					if n, err := r.Work(ctx, later); err != nil || n != 1 {
						t.Fatalf("work after the completion: %d tasks, %v", n, err)
					}
					m, err = e.meta.Manifest(ctx, "bkt", key)
					if err != nil {
						t.Fatal(err)
					}
					if moved := e.checkMoved(t, u, before, m.Parts, snap, node+"/"); moved != 1 {
						t.Fatalf("%d shards moved, want 1", moved)
					}
					// The dropped task's rebuilt file may be the very file
					// the object's task rebuilt: nothing may delete it.
					qs, err := e.meta.Cleanups(ctx, time.Now().Add(time.Hour), 100)
					if err != nil {
						t.Fatal(err)
					}
					named := map[cairn.ShardFile]bool{}
					for _, f := range m.Files() {
						named[f] = true
					}
					for _, q := range qs {
						for _, f := range q.Files {
							if named[f] {
								t.Fatalf("cleanup %+v queues %v, which the object names", q, f)
							}
						}
					}
					e.readBack(t, key, up.parts[1])
				}
			})
		})
	}
}

// checkCleanup checks that a cleanup record of a failed write queues a
// file of the stripe version (a dropped task's rebuilt file).
func (e *env) checkCleanup(t *testing.T, key, version string) {
	t.Helper()
	qs, err := e.meta.Cleanups(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Reason != cairn.CleanupFailed || q.Key != key {
			continue
		}
		for _, f := range q.Files {
			if strings.HasPrefix(f.Name, version+".") {
				return
			}
		}
	}
	t.Fatalf("no cleanup of the rebuilt files of version %s: %+v", version, qs)
}

// TestDamageOfUploadPartHealed: scrub (or a read) records a corrupt shard
// of a part of an upload in progress; the scan turns the record into a
// task of that part (before, no stripe matched it and the record was
// dropped unhealed), the repair rebuilds the shard elsewhere, the next
// walk finds it healed, and the upload completes into an object that
// reads back byte-exact.
func TestDamageOfUploadPartHealed(t *testing.T) {
	forStores(t, func(t *testing.T, store meta.Store) {
		ctx := context.Background()
		e := newEnvStore(t, store, 8, 1, "rs-4-2", 0)
		up := e.startUpload(t, "big", 3)
		u, before, snap := up.u, up.before, up.snap
		p := before[1]
		f := cairn.ShardFile{Disk: p.Shards[3].Disk, Name: cairn.ShardName(p.Version, 3)}
		e.files.Mu.Lock()
		b := e.files.Files[string(f.Disk)+"/"+f.Name]
		b[len(b)/2] ^= 0x10
		e.files.Mu.Unlock()
		now := time.Unix(1000, 0)
		if err := e.meta.PutDamage(ctx, cairn.Damage{Disk: f.Disk, Shard: f.Name, Kind: cairn.DamageCorrupt,
			Source: cairn.DamageScrub, Found: now}); err != nil {
			t.Fatal(err)
		}
		r := New(e.meta, e.exec, Config{Unit: 4096})
		if n, err := r.Scan(ctx, now); err != nil || n != 1 {
			t.Fatalf("scan: %d tasks, %v", n, err)
		}
		ts, _ := meta.AllRepairTasks(ctx, e.meta)
		if len(ts) != 1 || ts[0].Upload != up.id || ts[0].Part != 2 || fmt.Sprint(ts[0].Bad) != "[3]" {
			t.Fatalf("tasks: %+v", ts)
		}
		if _, err := r.Work(ctx, now); err != nil {
			t.Fatal(err)
		}
		if moved := e.checkMoved(t, u, before, e.parts(t, up), snap, "none"); moved != 1 {
			t.Fatalf("%d shards moved, want the damaged one", moved)
		}
		if _, err := r.Scan(ctx, now.Add(rescanEvery)); err != nil {
			t.Fatal(err)
		}
		if ds, _, _ := e.meta.Damages(ctx, "", 100); len(ds) != 0 {
			t.Fatalf("records left after healing: %+v", ds)
		}
		if st := r.Stats(); st.DamageQueued != 1 || st.DamageHealed != 1 || st.Repaired != 1 {
			t.Fatalf("stats: %+v", st)
		}
		e.readBack(t, "big", e.complete(t, up))
	})
}
