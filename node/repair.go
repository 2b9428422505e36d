package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"cairn"
	"cairn/node/wire"
)

// Repair: the node side of PUSH pipelined reconstruction and of PULL
// (docs/design/node-protocol.md, "Repair"; repair/plan decides who does
// what, this file carries it out).

// Push runs a PUSH chain: the request goes to Hops[0].Addr. Hop i reads
// slice s of its shard, receives the f partials I_{i-1} of slice s from
// hop i-1 (none at hop 0), computes I_i[j] = Coeffs[j]·S_i + I_{i-1}[j]
// and forwards the f partials to hop i+1; the last hop streams I[j] to
// Store[j] (a local volume write when Store[j] is one of its own disks,
// else a PUT of a shard to that node). Consecutive hops with the same Addr
// run in one process. It returns, per j, what was stored (size and
// CRC-32C) once every target is durable.
//
// Errors are *wire.Error values (Op "push") naming the culprit: a helper whose
// shard is missing (cairn.ErrNotFound), corrupt (cairn.ErrCorrupt) or
// shorter than Size (cairn.ErrInvalid), a hop's disk its node does not
// serve (ErrNotFound, code "no_disk"), a target that is full
// (cairn.ErrNoSpace) or unreachable (cairn.ErrUnavailable) — wherever in
// the chain it happened. A bad spec is ErrInvalid before anything is sent.
// When ctx ends, every hop stops and the targets' temporary files are
// removed; the error is ctx's. On any error no target holds a rebuilt
// shard (targets already stored are deleted again, best effort), though
// nodes down the chain may finish cleaning up after Push returned.
func (c *Client) Push(ctx context.Context, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	if err := spec.Validate(); err != nil {
		return nil, &wire.Error{Op: "push", Err: err}
	}
	h := spec.Hops[0]
	return c.repair(ctx, call{op: "push", method: http.MethodPost, addr: h.Addr, disk: h.Disk, shard: h.Shard, path: wire.PushPath},
		wire.RepairRequest{Spec: spec})
}

// Pull asks the node at puller ("host:port" or a base URL) to fetch every
// helper's shard (all at once, streaming, slice by slice; a local read for
// its own disks), compute the f rebuilt shards and store them to Store
// (PULL-Rep / PULL-Sur). Results and errors are as for Push (Op "pull");
// a puller that cannot be reached is ErrUnavailable naming no disk.
func (c *Client) Pull(ctx context.Context, puller string, spec wire.RepairSpec) ([]wire.ShardInfo, error) {
	if err := spec.Validate(); err != nil {
		return nil, &wire.Error{Op: "pull", Err: err}
	}
	if puller == "" {
		return nil, &wire.Error{Op: "pull", Err: fmt.Errorf("%w: no puller address", cairn.ErrInvalid)}
	}
	return c.repair(ctx, call{op: "pull", method: http.MethodPost, addr: puller, path: wire.PullPath}, wire.RepairRequest{Spec: spec})
}

// repair sends a push or pull request (k without header) and decodes the
// reply.
func (c *Client) repair(ctx context.Context, k call, req wire.RepairRequest) ([]wire.ShardInfo, error) {
	hv, err := wire.EncodeRepairRequest(req)
	if err != nil {
		return nil, &wire.Error{Op: k.op, Disk: k.disk, Shard: k.shard, Err: err}
	}
	k.header = http.Header{wire.HeaderRepair: {hv}}
	resp, err := c.send(ctx, k)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rr wire.RepairResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&rr); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, &wire.Error{Op: k.op, Disk: k.disk, Shard: k.shard, Err: cerr}
		}
		return nil, c.errf(k.op, k.disk, k.shard, cairn.ErrUnavailable, "bad reply from %s: %v", k.addr, err)
	}
	if len(rr.Stored) != len(req.Spec.Store) {
		return nil, c.errf(k.op, k.disk, k.shard, cairn.ErrUnavailable, "%s reported %d stored shards, %d were asked", k.addr, len(rr.Stored), len(req.Spec.Store))
	}
	return rr.Stored, nil
}
