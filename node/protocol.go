package node

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// The node protocol's paths, headers, wire structs and error codes are in
// package node/wire (docs/design/node-protocol.md is the specification).

// replyTimeout bounds the write of a JSON answer (writeJSON).
const replyTimeout = time.Minute

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	// A peer that does not take the answer within replyTimeout is cut
	// off (ServeHTTP clears the deadline for the next request).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(replyTimeout))
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"internal","message":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
