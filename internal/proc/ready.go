package proc

import (
	"maps"
	"slices"
	"strings"
)

// Keys of a ready line's addresses.
const (
	S3   = "s3"   // the S3 API, http://HOST:PORT
	Meta = "meta" // metadata client URLs, comma-separated
	Peer = "peer" // metadata peer URLs, comma-separated
	Node = "node" // the node protocol, HOST:PORT
	// Console is the web console, http(s)://HOST:PORT.
	Console = "console"
	// Metrics is the Prometheus metrics endpoint, HOST:PORT (serving
	// /metrics), of a process started with --metrics-addr.
	Metrics = "metrics"
)

// Ready is what a ready line says: the process's role and its bound
// addresses by key.
type Ready struct {
	Role  string
	Addrs map[string]string
}

// String formats r as its ready line (without the newline). Keys are
// sorted; values must not contain spaces.
func (r Ready) String() string {
	var b strings.Builder
	b.WriteString("cairn " + r.Role + " ready")
	for _, k := range slices.Sorted(maps.Keys(r.Addrs)) {
		b.WriteString(" " + k + "=" + r.Addrs[k])
	}
	return b.String()
}

// ParseReady reads a ready line; ok is false if line is not one.
func ParseReady(line string) (r Ready, ok bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "cairn" || f[2] != "ready" {
		return Ready{}, false
	}
	r = Ready{Role: f[1], Addrs: map[string]string{}}
	for _, kv := range f[3:] {
		k, v, found := strings.Cut(kv, "=")
		if !found || k == "" {
			return Ready{}, false
		}
		r.Addrs[k] = v
	}
	return r, true
}
