// Package benchcli holds the commands of cairn-bench: the papers'
// experiments with their plots (push, robustore, grid). They live apart from
// internal/cli so that the cairn binary does not link the plotting library
// (gonum.org/v1/plot) and its fonts; `cairn bench push|robustore|grid` runs
// cairn-bench.
//
// An experiment starts an embedded etcd in its own process and storage
// nodes as child processes: it runs its own program again as
// `cairn-bench node …` (internal/proc), so cmd/cairn-bench answers every
// other command as cairn does (Handles tells which are the experiments').
//
// Each writes a CSV file and PNG plots to --out and prints, last, one JSON
// summary line; --quick runs a small version in about 2-3 minutes.
package benchcli
