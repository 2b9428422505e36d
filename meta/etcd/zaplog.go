package etcdmeta

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger returns a zap logger for etcd's client and server that passes
// records at error level and above to log, and nothing if log is nil. etcd
// logs through zap only; this keeps cairn on slog and keeps etcd's
// info-level chatter off the terminal.
func zapLogger(log *slog.Logger) *zap.Logger {
	if log == nil {
		return zap.NewNop()
	}
	return zap.New(&slogCore{h: log.Handler(), min: zapcore.ErrorLevel})
}

// slogCore is a zapcore.Core writing to an slog.Handler.
type slogCore struct {
	h   slog.Handler
	min zapcore.Level
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(attrs(fs)), min: c.min}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fs)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

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
func attrs(fs []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fs {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}
