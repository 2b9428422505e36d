package etcdmeta

// The repair queue (docs/design/meta.md, "The repair queue"): each task
// at <p>repairs/<id>, and an index key per task at
// <p>repairq/<risk>/<created>/<id> whose byte order is the queue's order
// (meta.SortRepairTasks: riskiest first), so the riskiest tasks are read
// first without reading the queue whole. PutRepairTask and
// DeleteRepairTask change a task and its index key in one Txn that
// compares the task's mod revision with what was read.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

func (k keys) repairQueue() string { return k.p + "repairq/" }

// queueKey is t's index key: risk offset by 1000 and clamped to 0..9999
// in 4 digits, then Created as seconds offset by 2⁶² in 19 digits and
// nanoseconds in 9, then the ID. Byte order is (Risk, Created, ID) order
// for every risk in -1000..8999 and every time between years 1 and
// 146,000,000,000.
func (k keys) queueKey(t cairn.RepairTask) string {
	r := min(max(t.Risk+1000, 0), 9999)
	return fmt.Sprintf("%s%04d/%019d%09d/%s", k.repairQueue(), r, t.Created.Unix()+1<<62, t.Created.Nanosecond(), t.ID)
}

// PutRepairTask implements meta.Store: it reads the stored task (to find
// its index key), and puts the task and its index key, deleting the old
// index key if it moved, in one Txn that requires the task unchanged
// since read.
func (s *Store) PutRepairTask(ctx context.Context, t cairn.RepairTask) error {
	if err := meta.CheckRepairTask(t); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	op := "put repair task " + t.ID
	b, err := json.Marshal(t)
	v := string(b)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	tk, qk := s.k.repair(t.ID), s.k.queueKey(t)
	for {
		resp, err := s.cli.Get(ctx, tk)
		if err != nil {
			return s.wrap(op, err)
		}
		ops := []clientv3.Op{clientv3.OpPut(tk, v), clientv3.OpPut(qk, t.ID)}
		var cur *mvccpb.KeyValue
		if len(resp.Kvs) > 0 {
			cur = resp.Kvs[0]
			var old cairn.RepairTask
			if err := json.Unmarshal(cur.Value, &old); err != nil {
				return fmt.Errorf("%s: decoding the stored task: %w", op, err)
			}
			if ok := s.k.queueKey(old); ok != qk {
				ops = append(ops, clientv3.OpDelete(ok))
			}
		}
		tr, err := s.cli.Txn(ctx).If(unchanged(tk, cur)).Then(ops...).Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if tr.Succeeded {
			return nil
		}
	}
}

// DeleteRepairTask implements meta.Store: it reads the task, and deletes
// it and its index key in one Txn that requires it unchanged since read.
func (s *Store) DeleteRepairTask(ctx context.Context, id string) error {
	if err := s.live(); err != nil {
		return err
	}
	op := "delete repair task " + id
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	tk := s.k.repair(id)
	for {
		resp, err := s.cli.Get(ctx, tk)
		if err != nil {
			return s.wrap(op, err)
		}
		if len(resp.Kvs) == 0 {
			return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
		}
		var t cairn.RepairTask
		if err := json.Unmarshal(resp.Kvs[0].Value, &t); err != nil {
			return fmt.Errorf("%s: decoding the stored task: %w", op, err)
		}
		tr, err := s.cli.Txn(ctx).If(unchanged(tk, resp.Kvs[0])).
			Then(clientv3.OpDelete(tk), clientv3.OpDelete(s.k.queueKey(t))).Commit()
		if err != nil {
			return s.wrap(op, err)
		}
		if tr.Succeeded {
			return nil
		}
	}
}

// queueFetch is how many tasks one Txn of RepairQueuePage reads (within
// etcd's default --max-txn-ops of 128).
const queueFetch = 100

// RepairQueuePage implements meta.Store: a range read of the index keys
// after after's, then the tasks they name, read at the index's revision
// in Txns of queueFetch gets.
func (s *Store) RepairQueuePage(ctx context.Context, after *cairn.RepairTask, limit int) ([]cairn.RepairTask, bool, error) {
	const op = "repair queue"
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	from := s.k.repairQueue()
	if after != nil {
		from = s.k.queueKey(*after) + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.k.repairQueue())), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	out := make([]cairn.RepairTask, 0, len(resp.Kvs))
	for i := 0; i < len(resp.Kvs); i += queueFetch {
		var gets []clientv3.Op
		for _, kv := range resp.Kvs[i:min(i+queueFetch, len(resp.Kvs))] {
			gets = append(gets, clientv3.OpGet(s.k.repair(string(kv.Value))))
		}
		tr, err := s.cli.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return nil, false, s.wrap(op, err)
		}
		for j, r := range tr.Responses {
			kvs := r.GetResponseRange().Kvs
			if len(kvs) == 0 {
				continue // deleted since the index was read
			}
			var t cairn.RepairTask
			if err := json.Unmarshal(kvs[0].Value, &t); err != nil {
				return nil, false, fmt.Errorf("%s: decoding %q: %w", op, kvs[0].Key, err)
			}
			if s.k.queueKey(t) != string(resp.Kvs[i+j].Key) {
				continue // moved since the index was read: it is (or will be) met at its new place
			}
			out = append(out, t)
		}
	}
	return out, resp.More, nil
}

// indexRepairTasks writes the index key of every queued task (the upgrade
// from layout 2, whose queue had none), a page at a time; a task changed
// meanwhile by a layout-3 process already has its key.
func (s *Store) indexRepairTasks(ctx context.Context) error {
	var batch []clientv3.Op
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := s.cli.Txn(ctx).Then(batch...).Commit()
		batch = batch[:0]
		return err
	}
	var bad error
	err := s.pages(ctx, s.k.repairs(), clientv3.GetPrefixRangeEnd(s.k.repairs()), 0, func(kv *mvccpb.KeyValue) bool {
		var t cairn.RepairTask
		if err := json.Unmarshal(kv.Value, &t); err != nil {
			bad = fmt.Errorf("indexing the repair queue: decoding %q: %w", kv.Key, err)
			return false
		}
		batch = append(batch, clientv3.OpPut(s.k.queueKey(t), t.ID))
		if len(batch) == upgradeBatch {
			if bad = flush(); bad != nil {
				return false
			}
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err == nil {
		err = flush()
	}
	return err
}

// RepairTaskPage implements meta.Store: one range read of at most limit
// keys after <p>repairs/<after>.
func (s *Store) RepairTaskPage(ctx context.Context, after string, limit int) ([]cairn.RepairTask, bool, error) {
	const op = "repair tasks"
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	from := s.k.repairs()
	if after != "" {
		from = s.k.repair(after) + "\x00"
	}
	resp, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.k.repairs())), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	out := make([]cairn.RepairTask, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var t cairn.RepairTask
		if err := json.Unmarshal(kv.Value, &t); err != nil {
			return nil, false, fmt.Errorf("%s: decoding %q: %w", op, kv.Key, err)
		}
		out = append(out, t)
	}
	return out, resp.More, nil
}
