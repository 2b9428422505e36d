package wire

import (
	"fmt"
	"hash/crc32"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cairn"
)

// The node protocol, version 1 (docs/design/node-protocol.md is the
// specification). Every request is signed (auth.go: AuthScheme and the
// X-Cairn-Date, -Nonce and -Content-Sha256 headers). Disk IDs and shard names are path segments escaped with
// url.PathEscape (disk IDs contain '/').
//
//	PUT    /v1/disks/{disk}/shards/{name}           body: the shard content (any length, chunked ok)
//	                                                → 201 PutResponse; headers X-Cairn-Size, X-Cairn-Crc32c
//	GET    /v1/disks/{disk}/shards/{name}?offset=&length=
//	                                                → 200 streamed bytes, chunked, with trailers (see below)
//	DELETE /v1/disks/{disk}/shards/{name}           → 204
//	GET    /v1/disks/{disk}/shards?after=&limit=    → 200 ListResponse
//	GET    /v1/disks/{disk}                         → 200 DiskStat
//	GET    /v1/health                               → 200 HealthResponse
//	POST   /v1/push   header X-Cairn-Repair: the spec; body: partials from the previous hop
//	                                                → 200 RepairResponse (after the whole chain)
//	POST   /v1/pull   header X-Cairn-Repair: the spec; no body
//	                                                → 200 RepairResponse
//
// Errors are a status and an ErrorBody; the code, not the status, is the
// contract (EncodeError). Repair errors also name the culprit's disk and
// shard (ErrorBody.Disk, Shard).
const (
	// Prefix starts every path of this version of the protocol.
	Prefix = "/v1"
	// PushPath and PullPath are the repair endpoints.
	PushPath = Prefix + "/push"
	PullPath = Prefix + "/pull"
	// HealthPath is the node's health endpoint.
	HealthPath = Prefix + "/health"

	// HeaderSize and HeaderCRC carry a shard's content size and whole-content
	// CRC-32C (8 hex digits, FormatCRC) in PUT and GET responses.
	HeaderSize = "X-Cairn-Size"
	HeaderCRC  = "X-Cairn-Crc32c"
	// HeaderLength is the number of body bytes a GET response will carry
	// (the range length). The body is chunked so that trailers can follow.
	HeaderLength = "X-Cairn-Length"
	// HeaderIdentity, on a PUT, carries the identity the shard file is
	// to record (cairn.ShardIdentity.Encode, in standard base64): the
	// node stores it verbatim before the footer (docs/design/volume.md,
	// "Shard identity"). Without it the file has none.
	HeaderIdentity = "X-Cairn-Identity"
	// TrailerStatus ends every GET body: StatusOK, or an error code when
	// the node stopped sending (e.g. "corrupt": a block failed its CRC).
	TrailerStatus = "X-Cairn-Status"
	// TrailerError is the error message when TrailerStatus is not StatusOK.
	TrailerError = "X-Cairn-Error"
	// TrailerBodyCRC is the CRC-32C of the body bytes sent, so the client
	// can check the transfer end to end.
	TrailerBodyCRC = "X-Cairn-Body-Crc32c"
	// StatusOK is TrailerStatus of a GET that sent its whole range.
	StatusOK = "ok"
)

// ShardPath is the path of shard name on disk.
func ShardPath(disk cairn.DiskID, name string) string {
	return DiskPath(disk) + "/shards/" + url.PathEscape(name)
}

// DiskPath is the path of disk (STAT; LIST is DiskPath + "/shards").
func DiskPath(disk cairn.DiskID) string {
	return Prefix + "/disks/" + url.PathEscape(string(disk))
}

// FormatCRC is a CRC-32C as the headers and trailers carry it: 8
// lower-case hex digits.
func FormatCRC(c uint32) string { return fmt.Sprintf("%08x", c) }

// ParseCRC parses what FormatCRC made (8 hex digits).
func ParseCRC(s string) (uint32, error) {
	if len(s) != 8 {
		return 0, fmt.Errorf("bad CRC %q", s)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	return uint32(v), err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FormatBlockCRCs is HeaderBlockCRCs's value for p: the CRC-32C of
// every RAIDPWriteBlock of it.
func FormatBlockCRCs(p []byte) string {
	var b strings.Builder
	for o := 0; o < len(p); o += RAIDPWriteBlock {
		if o > 0 {
			b.WriteByte(',')
		}
		b.WriteString(FormatCRC(crc32.Checksum(p[o:min(len(p), o+RAIDPWriteBlock)], castagnoli)))
	}
	return b.String()
}

// ParseBlockCRCs parses HeaderBlockCRCs's value for a body of n bytes:
// exactly one CRC per RAIDPWriteBlock of it. The length is checked
// first (want CRCs of 8 digits, want−1 commas), so a field of another
// length fails ParseCRC and the count needs no second check.
func ParseBlockCRCs(s string, n int64) ([]uint32, error) {
	want := (n + RAIDPWriteBlock - 1) / RAIDPWriteBlock
	if want == 0 || int64(len(s)) != 9*want-1 {
		return nil, fmt.Errorf("%s %q: want %d CRCs for %d bytes", HeaderBlockCRCs, s, want, n)
	}
	crcs := make([]uint32, 0, want)
	for f := range strings.SplitSeq(s, ",") {
		c, err := ParseCRC(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", HeaderBlockCRCs, err)
		}
		crcs = append(crcs, c)
	}
	return crcs, nil
}

// ShardInfo is what a PUT stored: the content size and its CRC-32C
// (Castagnoli), as manifests record them.
type ShardInfo struct {
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc32c"`
	// Ident is the length of the identity the stored file carries (0:
	// none), what the manifest records as cairn.ShardLoc.Ident.
	Ident int `json:"ident,omitempty"`
}

// ShardStat is one listed shard: its name and content size (-1 if its file
// size is impossible, i.e. the file is damaged).
//
// A listing asked for identities (?identity=1, node.Client.ListIdentities)
// also has, from each file's footer and identity: CRC, the identity it
// records (nil: none, a format 1 file), when it was written, and Error
// for a file whose footer or identity is damaged.
type ShardStat struct {
	Name     string               `json:"name"`
	Size     int64                `json:"size"`
	CRC      uint32               `json:"crc32c,omitempty"`
	Ident    int                  `json:"ident,omitempty"` // the identity's length on disk
	Identity *cairn.ShardIdentity `json:"identity,omitempty"`
	Written  time.Time            `json:"written,omitzero"`
	Error    string               `json:"error,omitempty"`
}

// DiskStat is a disk's space as the node sees it. Broken is set when the
// disk refuses writes after a failed fsync.
type DiskStat struct {
	ID       cairn.DiskID `json:"id"`
	Capacity int64        `json:"capacity"`
	Free     int64        `json:"free"`
	Broken   string       `json:"broken,omitempty"`
}

// PutResponse is the JSON body of a successful PUT (wire format).
type PutResponse = ShardInfo

// ListResponse is the JSON body of LIST (wire format).
type ListResponse struct {
	Shards []ShardStat `json:"shards"`
	More   bool        `json:"more"`
}

// HealthResponse is the JSON body of GET /v1/health (wire format).
type HealthResponse struct {
	Node  cairn.NodeID `json:"node"`
	OK    bool         `json:"ok"` // every disk answers and none is broken
	Disks []DiskStat   `json:"disks"`
}

// The RAIDP calls (docs/design/raidp.md, "In the cluster"): a disk's
// superchunk slots and its Lstor parity, served by a node that opened the
// disk with an Lstor.
//
//	PUT  /v1/disks/{disk}/raidp/{slot}?offset=O       body: the bytes, Content-Length set,
//	                                                   X-Cairn-Crc32c of them → 204 once durable
//	                                                   (optional X-Cairn-Block-Crc32c: see HeaderBlockCRCs)
//	GET  /v1/disks/{disk}/raidp/{slot}?offset=&length= → 200 the bytes, X-Cairn-Crc32c of them
//	POST /v1/disks/{disk}/raidp/{slot}/zero?offset=&length= → 204 once durable
//	GET  /v1/disks/{disk}/lstor?offset=&length=        → 200 parity bytes, X-Cairn-Crc32c of them
//
// A disk served without an Lstor answers CodeNoLstor (404).
const (
	// MaxRAIDPCall bounds the bytes of one RAIDP write or read: a node
	// holds them in memory (a caller splits larger ranges).
	MaxRAIDPCall = 16 << 20
	// RAIDPWriteBlock is the unit of a RAIDP write's block CRCs
	// (HeaderBlockCRCs): cairn.RAIDPBlock, the unit of a raidp manifest's.
	RAIDPWriteBlock = cairn.RAIDPBlock
	// HeaderBlockCRCs, on a RAIDP write, lists the CRC-32C of every
	// RAIDPWriteBlock of the body (the last may be short), FormatCRC's
	// hex, comma-separated. With it a node writes the body block by block
	// as it arrives, each checked against its CRC first, instead of
	// holding it whole until the X-Cairn-Crc32c check; a node that does
	// not know it ignores it. A block that fails its CRC, or a body cut
	// short, ends the write there with the blocks before it durable.
	HeaderBlockCRCs = "X-Cairn-Block-Crc32c"
	// CodeNoLstor: the node serves the disk, but without an Lstor.
	CodeNoLstor = "no_lstor"
	// CodeLstorVerify: the disk's Lstor is marked for verification (a
	// journal record failed its CRC, a write failed half-way): RAIDP
	// writes and zeroes are refused (422) until an operator resyncs it.
	CodeLstorVerify = "lstor_needs_verify"
)

// RAIDPPath is the path of a slot of disk's RAIDP space.
func RAIDPPath(disk cairn.DiskID, slot int) string {
	return DiskPath(disk) + "/raidp/" + strconv.Itoa(slot)
}

// LstorPath is the path of disk's Lstor parity.
func LstorPath(disk cairn.DiskID) string { return DiskPath(disk) + "/lstor" }
