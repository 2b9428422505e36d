package grid

import (
	"sync/atomic"
	"time"

	"cairn/codec"
	"cairn/codec/all"
)

// Coding times the client's coding: the time spent in its codes' Encode
// and Reconstruct calls. Codes is a client.Config.Codes that builds
// cairn's codes (codec/all) wrapped to add to it. The wrappers hide the
// codes' optional capabilities (codec.Extensible), so a client using
// them writes no spare streams — as the paper's client, which sends each
// stripe to its server and nowhere else. Safe for concurrent use.
type Coding struct {
	encode, decode atomic.Int64 // nanoseconds
}

// Codes builds the code of policy, timed.
func (c *Coding) Codes(policy string) (codec.Code, error) {
	cd, err := all.New(policy)
	if err != nil {
		return nil, err
	}
	return timedCode{Code: cd, c: c}, nil
}

// Times returns the time spent encoding and decoding so far.
func (c *Coding) Times() (encode, decode time.Duration) {
	return time.Duration(c.encode.Load()), time.Duration(c.decode.Load())
}

type timedCode struct {
	codec.Code
	c *Coding
}

var _ codec.Code = timedCode{}

func (t timedCode) Encode(shards [][]byte) error {
	start := time.Now()
	err := t.Code.Encode(shards)
	t.c.encode.Add(int64(time.Since(start)))
	return err
}

func (t timedCode) Reconstruct(shards [][]byte, want []int) error {
	start := time.Now()
	err := t.Code.Reconstruct(shards, want)
	t.c.decode.Add(int64(time.Since(start)))
	return err
}
