package meta

import "errors"

// ErrClosed is returned by every method of a Store after Close, and by a
// blocked Campaign when the store is closed under it.
var ErrClosed = errors.New("meta: store closed")
