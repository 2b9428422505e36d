package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Log records of every long-running process (server, gateway, node, meta)
// are slog records written to stderr, as text (key=value) or as one JSON
// object a line. The keys are shared by every package, so that one query
// finds a thing in every process's log:
//
//	node    a storage node's ID          disk    a disk ID (node/diskN)
//	bucket  a bucket name                key     an object key
//	upload  a multipart upload ID        task    a repair task ID
//	shard   a shard (index or file)      err     the error
//	key_id  a node-protocol key's ID (role/name), never the key itself
//
// Secrets never go to the log: no S3 secret key, no cluster secret, no
// Authorization header, no sealed user record (TestLogsHoldNoSecrets).

// logFlags are the logging flags of a long-running process.
type logFlags struct {
	format  *string
	level   *string
	verbose *bool
}

// addLogFlags registers --log-format, --log-level and -v on fs.
func addLogFlags(fs *flag.FlagSet) *logFlags {
	return &logFlags{
		format:  fs.String("log-format", "text", "log records as text (key=value) or json (one object a line), to stderr"),
		level:   fs.String("log-level", "", "least severe records logged: debug, info, warn or error (default warn; info with -v)"),
		verbose: fs.Bool("v", false, "log more: --log-level info"),
	}
}

// logger returns the logger the flags ask for, writing to w, or an
// ErrUsage error naming the bad flag.
func (f *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	level := slog.LevelWarn
	if *f.verbose {
		level = slog.LevelInfo
	}
	if *f.level != "" {
		if err := level.UnmarshalText([]byte(*f.level)); err != nil || strings.ContainsAny(*f.level, "+-") {
			return nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", ErrUsage, *f.level)
		}
	}
	return newLogger(w, *f.format, level)
}

// newLogger returns a logger writing records at level and above to w as
// format ("text" or "json").
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", ErrUsage, format)
}

// logger is the logger of a short-lived command: warnings and errors, as
// text, to w (stderr).
func logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	l, _ := newLogger(w, "text", level)
	return l
}
