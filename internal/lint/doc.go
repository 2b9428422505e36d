// Package lint holds tests that enforce cairn's code rules on the whole
// module. They fail the build when:
//
//   - a pure core (codec/..., placement, layout, repair/plan, client/engine,
//     sim; tests and codec/codectest excepted) imports math/rand, os, net or
//     net/http, or calls a time function that reads the clock or sleeps:
//     cores take time and randomness as inputs (TestCoresArePure,
//     TestCoresReadNoClock);
//   - a package other than cmd/ imports internal/cli, node/ imports the S3
//     layer, or a codec imports a cairn package outside codec/
//     (TestLayering);
//   - code calls the untyped sync/atomic functions instead of the typed
//     atomics (TestNoRawAtomics);
//   - a Go comment or a Markdown file cites a file outside the repository
//     (the project's shared notes) instead of a page in docs/ or the fact
//     itself (TestNoOutsideCitations), or cites a docs/ page or heading that
//     does not exist (TestDocReferencesResolve).
package lint
