package etcdmeta

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/soheilhy/cmux"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger returns a zap logger for etcd's client and server that passes
// records at error level and above to log, and nothing if log is nil. etcd
// logs through zap only; this keeps cairn on slog and keeps etcd's
// info-level chatter off the terminal. Once stopping (if not nil) is set,
// error records whose error is one a stop causes (stopErr) pass at debug
// level: a clean stop of an embedded member logs no errors.
func zapLogger(log *slog.Logger, stopping *atomic.Bool) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{h: log.Handler(), min: zapcore.ErrorLevel, stopping: stopping})
}

// slogCore is a zapcore.Core writing to an slog.Handler.
type slogCore struct {
	h        slog.Handler
	min      zapcore.Level
	stopping *atomic.Bool // nil: never
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(attrs(fs)), min: c.min, stopping: c.stopping}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	level := slogLevel(e.Level)
	if level == slog.LevelError && e.Message == storageVersionMsg {
		// etcd 3.6's storage version monitor reports a member whose
		// backend has no term or confstate yet (just started, or removed
		// as it starts) at error level, then tries again on its next
		// tick: a warning, not an error of cairn's metadata store
		// (TestMetaRemoveAndAdd saw it once in CI on a member removed at
		// start).
		level = slog.LevelWarn
	}
	if c.stopping != nil && c.stopping.Load() && stopErr(fs) {
		level = slog.LevelDebug
		if !c.h.Enabled(context.Background(), level) {
			return nil
		}
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fs)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// stopErr reports whether fs carry an error that stopping a member
// causes: its listeners and servers report that they were closed.
func stopErr(fs []zapcore.Field) bool {
	for _, f := range fs {
		if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType &&
			(errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, cmux.ErrServerClosed)) {
			return true
		}
	}
	return false
}

// storageVersionMsg is the message of etcd's storage version monitor when
// it cannot yet read the schema version of a member's backend.
const storageVersionMsg = "failed to update storage version"

// zapKeys maps etcd's zap keys to cairn's log keys where they differ.
var zapKeys = map[string]string{"error": "err"}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l < zapcore.InfoLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// attrs converts zap fields through zap's map encoder, sorted by key.
// zap's error key ("error") becomes cairn's ("err").
func attrs(fs []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fs {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		out = append(out, slog.Any(cmp.Or(zapKeys[k], k), enc.Fields[k]))
	}
	return out
}
