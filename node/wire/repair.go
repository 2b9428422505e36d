package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"cairn"
)

// Hop is one helper shard of a repair: a hop of a PUSH chain (in chain
// order), or a shard a PULL fetches.
type Hop struct {
	Addr   string       `json:"addr"`   // the node serving Disk: "host:port" or a base URL with scheme
	Disk   cairn.DiskID `json:"disk"`   // the disk holding the helper shard
	Shard  string       `json:"shard"`  // shard name on Disk
	Coeffs []byte       `json:"coeffs"` // Coeffs[j]: weight of this shard in rebuilt shard j; len(Coeffs) == len(Store)
}

// Target is where rebuilt shard j is written, as a normal shard (tmp file,
// fsync, rename, through the volume): written locally by the node that
// computes it when Disk is one of its own, else sent there with a PUT.
//
// Identity, if set, is what the rebuilt file records before its footer
// (cairn.ShardIdentity.Encode naming Shard; docs/design/volume.md, "Shard
// identity"): the lost file's, which the repairer derives from the
// manifest. Unset: the file records none.
type Target struct {
	Addr     string       `json:"addr"`
	Disk     cairn.DiskID `json:"disk"`
	Shard    string       `json:"shard"`
	Identity []byte       `json:"identity,omitempty"`
}

// RepairSpec describes rebuilding f = len(Store) shards, each Size bytes,
// from helper shards of (at least) Size bytes, reading [0, Size) of each:
// rebuilt shard j = Σ_i Hops[i].Coeffs[j]·(shard of Hops[i]), byte by byte
// in GF(2^8). The work moves slice by slice: slice s is the byte range
// [s·Unit, min((s+1)·Unit, Size)).
//
// A spec is a value sent as JSON; nothing in the protocol modifies it.
type RepairSpec struct {
	Size  int64    `json:"size"`
	Unit  int64    `json:"unit"`
	Hops  []Hop    `json:"hops"`
	Store []Target `json:"store"`
}

// Limits of a repair spec, so that one repair's memory on a node stays
// bounded: a node holds a few slices per stream (see docs/design/node-protocol.md).
const (
	// MaxRepairUnit bounds RepairSpec.Unit.
	MaxRepairUnit = 16 << 20
	// MaxRepairSlice bounds the f partials of one slice: len(Store)·min(Unit, Size).
	MaxRepairSlice = 64 << 20
	// MaxRepairTargets bounds len(Store).
	MaxRepairTargets = 32
	// MaxRepairHops bounds len(Hops) (a GF(2^8) code has at most 256 shards).
	MaxRepairHops = 255
	// maxRepairSize bounds Size, so that f·Size cannot overflow.
	maxRepairSize = 1 << 50
	// maxRepairHeader bounds the encoded spec (a node reads at most
	// 64 KiB of headers).
	maxRepairHeader = 48 << 10
)

// Validate checks the spec: Size and Unit positive (Unit at most
// MaxRepairUnit), 1..MaxRepairHops hops, 1..MaxRepairTargets targets,
// len(Coeffs) == len(Store) for every hop, addresses and disks set, valid
// shard names, no shard read twice or written twice, and no helper also a
// target. Errors wrap cairn.ErrInvalid.
func (s *RepairSpec) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: repair spec: %s", cairn.ErrInvalid, fmt.Sprintf(format, args...))
	}
	f := len(s.Store)
	switch {
	case s.Size <= 0 || s.Size > maxRepairSize:
		return bad("size %d out of range", s.Size)
	case s.Unit <= 0 || s.Unit > MaxRepairUnit:
		return bad("unit %d not in 1..%d", s.Unit, MaxRepairUnit)
	case len(s.Hops) == 0 || len(s.Hops) > MaxRepairHops:
		return bad("%d hops, want 1..%d", len(s.Hops), MaxRepairHops)
	case f == 0 || f > MaxRepairTargets:
		return bad("%d targets, want 1..%d", f, MaxRepairTargets)
	case int64(f)*min(s.Unit, s.Size) > MaxRepairSlice:
		return bad("%d targets of %d-byte slices exceed %d bytes per slice", f, min(s.Unit, s.Size), MaxRepairSlice)
	}
	type key struct {
		disk  cairn.DiskID
		shard string
	}
	seen := map[key]string{}
	for i, h := range s.Hops {
		what := fmt.Sprintf("hop %d", i)
		if h.Addr == "" || h.Disk == "" {
			return bad("%s: no address or disk", what)
		}
		if err := cairn.ValidateShardName(h.Shard); err != nil {
			return bad("%s: %v", what, err)
		}
		if len(h.Coeffs) != f {
			return bad("%s: %d coefficients for %d targets", what, len(h.Coeffs), f)
		}
		if prev, dup := seen[key{h.Disk, h.Shard}]; dup {
			return bad("%s reads %s %s, as %s does", what, h.Disk, h.Shard, prev)
		}
		seen[key{h.Disk, h.Shard}] = what
	}
	for j, t := range s.Store {
		what := fmt.Sprintf("target %d", j)
		if t.Addr == "" || t.Disk == "" {
			return bad("%s: no address or disk", what)
		}
		if err := cairn.ValidateShardName(t.Shard); err != nil {
			return bad("%s: %v", what, err)
		}
		if t.Identity != nil {
			id, err := cairn.DecodeIdentity(t.Identity)
			if err != nil {
				return bad("%s: %v", what, err)
			}
			if id.Name() != t.Shard {
				return bad("%s: the identity names shard %s, not %s", what, id.Name(), t.Shard)
			}
		}
		if prev, dup := seen[key{t.Disk, t.Shard}]; dup {
			return bad("%s writes %s %s, which %s uses", what, t.Disk, t.Shard, prev)
		}
		seen[key{t.Disk, t.Shard}] = what
	}
	return nil
}

// Slices returns the number of slices: ⌈Size/Unit⌉.
func (s *RepairSpec) Slices() int { return int((s.Size + s.Unit - 1) / s.Unit) }

// SliceLen returns the length of slice i: min(Unit, Size − i·Unit).
func (s *RepairSpec) SliceLen(i int) int { return int(min(s.Unit, s.Size-int64(i)*s.Unit)) }

// HeaderRepair carries a repair request (RepairRequest as JSON, encoded
// base64url without padding) on POST /v1/push and /v1/pull.
const HeaderRepair = "X-Cairn-Repair"

// RepairRequest is the JSON in the X-Cairn-Repair header (wire format).
//
// The body of POST /v1/push to hop Hop > 0 is the partial stream from the
// previous hop; to hop 0, and for POST /v1/pull, it is empty. The partial
// stream (documentation only, no type): for every slice s in order, with
// L = min(Unit, Size − s·Unit), the f partials I[0..f) of that slice back
// to back, f·L bytes, so the whole body is f·Size bytes
// (Content-Length). There is no framing and no checksum of its own: the
// rebuilt shards' CRCs, checked against the manifest, cover it end to end.
type RepairRequest struct {
	Spec RepairSpec `json:"spec"`
	// Hop is the index of the first hop the receiving node runs (push only).
	// The node runs the hops Hop, Hop+1, … while their Addr equals
	// Hops[Hop].Addr, then forwards to the next hop or stores the result.
	Hop int `json:"hop,omitempty"`
}

// RepairResponse is the JSON body of a successful push or pull (wire
// format): Stored[j] is what Store[j] holds now.
type RepairResponse struct {
	Stored []ShardInfo `json:"stored"`
}

// EncodeRepairRequest returns the X-Cairn-Repair header value of req.
// A request too large for a header is cairn.ErrInvalid.
func EncodeRepairRequest(req RepairRequest) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	h := base64.RawURLEncoding.EncodeToString(b)
	if len(h) > maxRepairHeader {
		return "", fmt.Errorf("%w: repair spec: %d bytes encoded, more than %d", cairn.ErrInvalid, len(h), maxRepairHeader)
	}
	return h, nil
}

// DecodeRepairRequest parses and validates an X-Cairn-Repair header value
// (the spec, and a hop within it). Errors wrap cairn.ErrInvalid.
func DecodeRepairRequest(h string) (RepairRequest, error) {
	var req RepairRequest
	if h == "" {
		return req, fmt.Errorf("%w: no %s header", cairn.ErrInvalid, HeaderRepair)
	}
	if len(h) > maxRepairHeader {
		return req, fmt.Errorf("%w: %s header of %d bytes, more than %d", cairn.ErrInvalid, HeaderRepair, len(h), maxRepairHeader)
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return req, fmt.Errorf("%w: %s header: %v", cairn.ErrInvalid, HeaderRepair, err)
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("%w: %s header: %v", cairn.ErrInvalid, HeaderRepair, err)
	}
	if err := req.Spec.Validate(); err != nil {
		return req, err
	}
	if req.Hop < 0 || req.Hop >= len(req.Spec.Hops) {
		return req, fmt.Errorf("%w: hop %d of a chain of %d", cairn.ErrInvalid, req.Hop, len(req.Spec.Hops))
	}
	return req, nil
}
