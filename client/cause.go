package client

import (
	"context"
	"errors"

	"cairn"
)

// shardCause is a shard request's error as the cause of an object
// operation's failure (wrapped under cairn.ErrUnavailable). Its text is
// the shard's error. errors.Is finds in it only what keeps its meaning for
// the object: cairn.ErrNoSpace (the disks are full) and the context's
// errors. A shard's cairn.ErrNotFound (its file or its disk is missing),
// ErrAuth (the node refused the cluster secret), ErrInvalid, ErrCorrupt
// or ErrConflict says nothing about the bucket or object the caller
// named, and must not read as if it did (a gateway would answer
// NoSuchKey to a PUT). errors.As does not look inside it either.
type shardCause struct{ err error }

func (c *shardCause) Error() string { return c.err.Error() }

// Is reports whether the shard's error is target, for the targets that
// keep their meaning for the object.
func (c *shardCause) Is(target error) bool {
	switch target {
	case cairn.ErrNoSpace, context.Canceled, context.DeadlineExceeded:
		return errors.Is(c.err, target)
	}
	return false
}

// shardErr returns err as a shardCause (nil stays nil).
func shardErr(err error) error {
	if err == nil {
		return nil
	}
	return &shardCause{err: err}
}
