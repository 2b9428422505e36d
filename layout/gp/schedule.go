package gp

import "time"

// Step is one piece of a read: Produce is how long it takes to have the
// piece in memory (read from its disk, or rebuilt from helpers on a
// degraded read), Send how long to send it to the client.
type Step struct {
	Produce, Send time.Duration
}

// PieceTime is when one piece's production and sending ran, from the start
// of the read.
type PieceTime struct {
	ProduceStart, ProduceEnd time.Duration
	SendStart, SendEnd       time.Duration
}

// Timeline is a read's schedule: per piece, and the time of its first byte
// (the first piece's SendStart) and of its end.
type Timeline struct {
	Pieces    []PieceTime
	FirstByte time.Duration
	Done      time.Duration
}

// Pipeline schedules a read of the pieces in order (§4.2, Figure 8):
// pieces are produced one at a time, the next as soon as the previous is
// done, and sent one at a time as soon as they are produced and the link is
// free — so piece i+1 is repaired while piece i is sent. ahead ≥ 1 bounds
// memory: piece i is not produced before piece i−ahead has started sending
// (ahead = 1: at most one produced piece waits). Pure arithmetic; the
// caller's durations are its model or its measurements.
func Pipeline(steps []Step, ahead int) Timeline {
	ahead = max(ahead, 1)
	tl := Timeline{Pieces: make([]PieceTime, len(steps))}
	var produced, sent time.Duration
	for i, s := range steps {
		start := produced
		if i >= ahead {
			start = max(start, tl.Pieces[i-ahead].SendStart)
		}
		produced = start + s.Produce
		sendStart := max(produced, sent)
		sent = sendStart + s.Send
		tl.Pieces[i] = PieceTime{ProduceStart: start, ProduceEnd: produced, SendStart: sendStart, SendEnd: sent}
	}
	if len(steps) > 0 {
		tl.FirstByte = tl.Pieces[0].SendStart
		tl.Done = sent
	}
	return tl
}

// RangePieces returns the indices [first, last) of the pieces, in object
// order, that bytes [off, off+n) touch: a ranged read starts at the first
// piece it touches. Sizes are the pieces' sizes in object order.
func RangePieces(sizes []int64, off, n int64) (first, last int) {
	if n <= 0 {
		return 0, 0
	}
	first, last = len(sizes), 0
	pos := int64(0)
	for i, s := range sizes {
		if pos < off+n && pos+s > off {
			first = min(first, i)
			last = i + 1
		}
		pos += s
	}
	if last == 0 {
		return 0, 0
	}
	return first, last
}
