package wire

import (
	"errors"
	"net/http"

	"cairn"
)

// Error is a failed node call. For a push or pull, Disk and Shard name the
// culprit, which may be on another node than the one called: the helper
// whose shard is missing or corrupt, or the target that failed.
type Error struct {
	Op     string // "put", "get", "delete", "list", "stat", "push", "pull"
	Disk   cairn.DiskID
	Shard  string
	Status int    // HTTP status, 0 if none arrived
	Code   string // protocol error code, if any
	Err    error  // chain holding the sentinel
	// Message is the node's message verbatim, when Code came from a node
	// (a node passing a failure on up a push chain sends it unchanged).
	Message string
}

func (e *Error) Error() string {
	s := "node " + e.Op
	if e.Disk != "" {
		s += " " + string(e.Disk)
	}
	if e.Shard != "" {
		s += " " + e.Shard
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorBody is the JSON body of every error response (wire format). Disk
// and Shard are optional (omitted when empty): a push or pull sets them to
// the disk and shard that caused the failure — a helper whose shard is
// missing or corrupt, a target that is full or unreachable — which may be
// on another node than the one answering. Older clients ignore them.
type ErrorBody struct {
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
// node directly (with the status in the comment).
var codeAliases = map[string]error{
	"too_large": cairn.ErrInvalid,  // 413: body over the node's largest shard
	"range":     cairn.ErrInvalid,  // 416: range outside the shard
	"no_route":  cairn.ErrInvalid,  // 404: no such endpoint or method
	"no_disk":   cairn.ErrNotFound, // 404: the node does not serve the disk
	CodeNoLstor: cairn.ErrNotFound, // 404: the node serves the disk without an Lstor
	// 422: the disk's Lstor is marked for verification; permanent until
	// an operator resyncs it
	CodeLstorVerify: cairn.ErrCorrupt,
	// 403: the request's key is valid but its role may not make it
	CodeForbidden: cairn.ErrAuth,
}

// CodeForbidden is the code of a request whose key was verified but
// whose role may not make it (403): a reader key asking to PUT, say.
const CodeForbidden = "forbidden"

// CodeInternal is the code of an error that matches no sentinel (500): a
// node's I/O error, say.
const CodeInternal = "internal"

// EncodeError returns the code and status for err (500 CodeInternal when
// it matches no sentinel).
func EncodeError(err error) (code string, status int) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code, e.status
		}
	}
	return CodeInternal, http.StatusInternalServerError
}

// DecodeError returns the sentinel for a code; for an unknown code it
// goes by status, and anything else (including 500 CodeInternal, a node's
// I/O error) is cairn.ErrUnavailable: the shard cannot be had from this
// node now.
func DecodeError(code string, status int) error {
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
