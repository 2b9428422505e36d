// Package lint holds tests that enforce cairn's code rules on the whole
// module. They fail the build when:
//
//   - a pure core (codec/..., placement, raidp, layout/gp, repair/plan,
//     repair/decide, client/engine, client/slowdisk, crypt, access; tests and codec/codectest excepted) imports math/rand,
//     os, net or net/http, or calls a time function that reads the clock or
//     sleeps: cores take time and randomness as inputs (TestCoresArePure,
//     TestCoresReadNoClock);
//   - an import breaks the layering that docs/design/layering.md draws
//     (TestLayering), or a package the rules name does not exist
//     (TestLayeringListsExist);
//   - code calls the untyped sync/atomic functions instead of the typed
//     atomics (TestNoRawAtomics);
//   - a Go comment or a Markdown file cites a file outside the repository
//     (the project's shared notes) instead of a page in docs/ or the fact
//     itself (TestNoOutsideCitations), or cites a docs/ page or heading that
//     does not exist (TestDocReferencesResolve).
//   - a test calls time.Sleep outside a testing/synctest bubble without a
//     "// real time:" comment saying why it must take real time: tests wait
//     on the condition itself (TestSleepsAreRealTime).
package lint
