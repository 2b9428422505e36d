// Package console is cairn's web console: a small web application, served
// beside the S3 gateway on its own address, that shows an operator the
// cluster (nodes, disks, states, capacity, failure domains), repair and
// scrub progress, live S3 throughput, buckets and their usage, and an
// object browser with uploads, downloads, deletes and each object's
// manifest (its code, shards, disks and CRCs).
//
// Vocabulary:
//
//   - session: what a login makes: a random 256-bit ID the browser keeps
//     in an HttpOnly, SameSite=Strict cookie, and the server's record of
//     whose credentials it holds and until when (Config.SessionTTL). The
//     table of sessions is bounded (Config.MaxSessions): a login into a
//     full table first drops the expired sessions, then the one that
//     expires soonest. The table is kept by the SHA-256 of the ID, so a
//     lookup does not compare the secret ID itself.
//   - acting as the user: every view of bucket or object data is an S3
//     request the console signs with the session's credentials (s3.SignV4)
//     and hands to the gateway's handler in-process (Config.S3). The
//     gateway authenticates and authorizes it exactly as it would a
//     request from the network: a user sees and touches its own buckets,
//     root all. A login is such a request too (ListBuckets): a wrong
//     secret fails the signature check and gets no session.
//   - state-changing call: a POST, PUT or DELETE of the JSON API. It must
//     carry the header X-Cairn-Console: 1, which the page sends and which a
//     cross-site form or image cannot (a cross-origin fetch with a custom
//     header needs CORS, which the console never grants); a request whose
//     Origin is not the console's own is refused too.
//   - cluster view: what `cairn admin status` shows (Config.Cluster). It
//     names nodes, disks and repair work, not objects, but it is the
//     operator's: only a root identity's session sees it.
//   - throughput: Counters of S3 requests and bytes in and out that wrap
//     the gateway's handler; the page polls them every 2 s and draws the
//     rates.
//
// Usage:
//
//	counters := &console.Counters{}
//	s3h = counters.Wrap(s3h)            // serve S3 through the counters
//	c, err := console.New(console.Config{S3: s3h, Credentials: creds, Objects: data, Meta: store,
//		Cluster: status, Counters: counters})
//	srv := &http.Server{Addr: "127.0.0.1:9001", Handler: c}
//
// docs/design/console.md lists the endpoints and the session rules.
//
// Caveats:
//
//   - A session holds the secret key it logged in with, in the server's
//     memory only, to sign the S3 requests it makes; a logout or the
//     session's expiry forgets it. A changed or removed secret key ends
//     the session's use at its next request (the gateway refuses the
//     signature).
//   - Sessions are per process: a restarted server or another gateway
//     needs a new login.
//   - The speculative engine's decisions are shown as counts (hedged and
//     cancelled requests, spare rows, decodes: their rates between two
//     refreshes) and as the disks it holds slow now, not as a log of
//     single decisions: the data path keeps counters, not a history.
//   - Unlike a signed S3 request, a login sends the secret key itself: the
//     console serves plain HTTP unless it is given a TLS config (cairn
//     warns when a plain console listens off loopback), and marks the
//     cookie Secure only over TLS.
//   - The failed-login budget is per client address: clients behind one
//     proxy share it, and a guesser with many addresses has one budget
//     per address. A limited login gets 429; sessions are never touched.
//   - A download is served as an attachment with a sandboxing content
//     security policy, so an object's bytes never run as the console.
package console
