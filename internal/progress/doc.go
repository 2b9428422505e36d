// Package progress draws progress bars on a terminal: what is being done,
// a bar, done/total, the rate and [elapsed:ETA], redrawn in place on one
// line of stderr. cairn put/get and every cairn bench use it.
//
// Vocabulary:
//   - A Bar counts Bytes (shown as sizes and a byte rate) or Steps (the
//     measurements or experiment points of a benchmark, shown as n/total).
//   - A Bar draws only on a terminal (IsTerminal): on a pipe, a file or a
//     buffer it is silent, so scripts and logs get no control characters.
//     NewTo draws unconditionally, for tests and callers that decided.
//   - The ETA is the remaining count over the recent rate (the mean of
//     the last ten half-second rates); with an unknown total (-1) a Bar
//     shows a spinner, the count and the rate, and no ETA.
//
// Usage:
//
//	bar := progress.New(stderr, "put photos/cat.jpg", size, progress.Bytes)
//	defer bar.Done()
//	... bar.Set(n) or bar.Add(n) as the work goes ...
//
// Caveats: a Bar is safe for concurrent Set and Add; Done must come after
// the last of them. Before writing other lines to the terminal the Bar is
// on, call Clear: the next Set or Add draws it again. The bar's clock is
// the time package's (time.Now), so tests run it in a synctest bubble.
package progress
