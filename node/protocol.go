package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"cairn"
)

// The node protocol, version 1 (docs/design/node-protocol.md is the
// specification). Every request carries "Authorization: Bearer <cluster
// secret>". Disk IDs and shard names are path segments escaped with
// url.PathEscape (disk IDs contain '/').
//
//	PUT    /v1/disks/{disk}/shards/{name}           body: the shard content (any length, chunked ok)
//	                                                → 201 putResponse; headers X-Cairn-Size, X-Cairn-Crc32c
//	GET    /v1/disks/{disk}/shards/{name}?offset=&length=
//	                                                → 200 streamed bytes, chunked, with trailers (see below)
//	DELETE /v1/disks/{disk}/shards/{name}           → 204
//	GET    /v1/disks/{disk}/shards?after=&limit=    → 200 listResponse
//	GET    /v1/disks/{disk}                         → 200 DiskStat
//	GET    /v1/health                               → 200 healthResponse
//	POST   /v1/push   header X-Cairn-Repair: the spec; body: partials from the previous hop
//	                                                → 200 repairResponse (after the whole chain)
//	POST   /v1/pull   header X-Cairn-Repair: the spec; no body
//	                                                → 200 repairResponse
//
// Errors are a status and an errorBody; the code, not the status, is the
// contract (errorTable). Repair errors also name the culprit's disk and
// shard (errorBody.Disk, Shard).
const (
	apiPrefix = "/v1"

	// HeaderSize and HeaderCRC carry a shard's content size and whole-content
	// CRC-32C (8 hex digits) in PUT and GET responses.
	HeaderSize = "X-Cairn-Size"
	HeaderCRC  = "X-Cairn-Crc32c"
	// HeaderLength is the number of body bytes a GET response will carry
	// (the range length). The body is chunked so that trailers can follow.
	HeaderLength = "X-Cairn-Length"
	// TrailerStatus ends every GET body: "ok", or an error code when the
	// node stopped sending (e.g. "corrupt": a block failed its CRC).
	TrailerStatus = "X-Cairn-Status"
	// TrailerError is the error message when TrailerStatus is not "ok".
	TrailerError = "X-Cairn-Error"
	// TrailerBodyCRC is the CRC-32C of the body bytes sent, so the client
	// can check the transfer end to end.
	TrailerBodyCRC = "X-Cairn-Body-Crc32c"

	statusOK = "ok"
)

// ShardInfo is what a PUT stored: the content size and its CRC-32C
// (Castagnoli), as manifests record them.
type ShardInfo struct {
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc32c"`
}

// ShardStat is one listed shard: its name and content size (-1 if its file
// size is impossible, i.e. the file is damaged).
type ShardStat struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// DiskStat is a disk's space as the node sees it. Broken is set when the
// disk refuses writes after a failed fsync.
type DiskStat struct {
	ID       cairn.DiskID `json:"id"`
	Capacity int64        `json:"capacity"`
	Free     int64        `json:"free"`
	Broken   string       `json:"broken,omitempty"`
}

// putResponse is the JSON body of a successful PUT (wire format).
type putResponse = ShardInfo

// listResponse is the JSON body of LIST (wire format).
type listResponse struct {
	Shards []ShardStat `json:"shards"`
	More   bool        `json:"more"`
}

// healthResponse is the JSON body of GET /v1/health (wire format).
type healthResponse struct {
	Node  cairn.NodeID `json:"node"`
	OK    bool         `json:"ok"` // every disk answers and none is broken
	Disks []DiskStat   `json:"disks"`
}

// errorBody is the JSON body of every error response (wire format). Disk
// and Shard are optional (omitted when empty): a push or pull sets them to
// the disk and shard that caused the failure — a helper whose shard is
// missing or corrupt, a target that is full or unreachable — which may be
// on another node than the one answering. Older clients ignore them.
type errorBody struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Disk    cairn.DiskID `json:"disk,omitempty"`
	Shard   string       `json:"shard,omitempty"`
}

// errorTable maps the cairn sentinels to protocol codes and HTTP statuses,
// both ways, in one place. Encoding takes the first entry the error
// matches; decoding looks the code up here and in codeAliases, or, for an
// unknown code, the status.
var errorTable = []struct {
	err    error
	code   string
	status int
}{
	{cairn.ErrAuth, "unauthorized", http.StatusUnauthorized},
	{cairn.ErrInvalid, "invalid", http.StatusBadRequest},
	{cairn.ErrNotFound, "not_found", http.StatusNotFound},
	{cairn.ErrNoSpace, "no_space", http.StatusInsufficientStorage},
	{cairn.ErrCorrupt, "corrupt", http.StatusUnprocessableEntity},
	{cairn.ErrExists, "exists", http.StatusConflict},
	{cairn.ErrConflict, "conflict", http.StatusConflict},
	{cairn.ErrUnavailable, "unavailable", http.StatusServiceUnavailable},
}

// codeAliases are more precise codes for the same sentinels, sent by the
// handler directly (with the status in the comment).
var codeAliases = map[string]error{
	"too_large": cairn.ErrInvalid,  // 413: body over MaxShardSize
	"range":     cairn.ErrInvalid,  // 416: range outside the shard
	"no_route":  cairn.ErrInvalid,  // 404: no such endpoint or method
	"no_disk":   cairn.ErrNotFound, // 404: the node does not serve the disk
}

const codeInternal = "internal"

// encodeError returns the code and status for err (500 "internal" when it
// matches no sentinel).
func encodeError(err error) (code string, status int) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code, e.status
		}
	}
	return codeInternal, http.StatusInternalServerError
}

// decodeError returns the sentinel for a code; for an unknown code it
// goes by status, and anything else (including 500 "internal", a node's
// I/O error) is cairn.ErrUnavailable: the shard cannot be had from this
// node now.
func decodeError(code string, status int) error {
	for _, e := range errorTable {
		if e.code == code {
			return e.err
		}
	}
	if err, ok := codeAliases[code]; ok {
		return err
	}
	for _, e := range errorTable {
		if e.status == status {
			return e.err
		}
	}
	return cairn.ErrUnavailable
}

func shardPath(disk cairn.DiskID, name string) string {
	return apiPrefix + "/disks/" + url.PathEscape(string(disk)) + "/shards/" + url.PathEscape(name)
}

func diskPath(disk cairn.DiskID) string {
	return apiPrefix + "/disks/" + url.PathEscape(string(disk))
}

func formatCRC(c uint32) string { return fmt.Sprintf("%08x", c) }

func parseCRC(s string) (uint32, error) {
	if len(s) != 8 {
		return 0, fmt.Errorf("bad CRC %q", s)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	return uint32(v), err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal","message":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
