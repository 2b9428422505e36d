// Package etcdmeta is the production meta.Store: cairn's metadata in etcd,
// either an embedded member started in this process (StartEmbedded; `cairn
// server` runs a single member, `cairn meta` one of a 3- or 5-member
// cluster) or an external etcd cluster. It passes metatest.
//
// Usage:
//
//	srv, err := etcdmeta.StartEmbedded(ctx, etcdmeta.EmbedConfig{
//		Dir:       filepath.Join(dataDir, "meta"),
//		ClientURL: "http://127.0.0.1:2379",
//		PeerURL:   "http://127.0.0.1:2380",
//	})
//	...
//	defer srv.Close()
//	store, err := etcdmeta.Open(ctx, srv.Endpoints(), etcdmeta.Options{Logger: log})
//	...
//	defer store.Close() // before srv.Close
//
// For a cluster, start every member with the same InitialCluster
// ("m1=http://h1:2380,m2=http://h2:2380,m3=http://h3:2380") and open stores
// on all client URLs; the client fails over between them.
//
// Keys live under a prefix (DefaultPrefix, "/cairn/"); the layout and the
// transactions are specified in docs/design/meta.md and summarized on the
// keys type. Every value is JSON. The writes that must be atomic are single
// etcd Txns:
//
//   - The writes that change what manifests and parts name
//     (CommitManifest, DeleteManifest, UpdateManifest, PutPart,
//     DeleteUpload, CompleteUpload) are counted writes (usage.go): read
//     the keys the decision depends on, decide (CommitManifest: the bucket
//     exists and the object's stored version is prevVersion, or absent
//     for ""), and apply the write together with the usage counters'
//     change in one Txn that compares those keys' and the counters' mod
//     revisions with what was read; start over if one moved (the failed
//     Txn's Else reads the next round's keys). The usage counters are
//     split into 32 shards each, and one store's writes in flight take
//     different shards, so one hot bucket's writers seldom meet on a key.
//     A commit that may find its key absent (prevVersion "" or
//     meta.AnyVersion) guesses instead of reading first — the bucket
//     record from the bucket cache, the key new, the counter shards as
//     this store last saw them (countercache.go) — and is then one Txn.
//
// With Options.BucketCache, Bucket serves records from memory, kept
// current by a watch on the bucket keys and never staler than the bound
// (bucketcache.go; docs/design/meta.md, "Bucket cache").
//   - DeleteBucket: if the bucket key exists and no key exists under the
//     bucket's object prefix (a range compare), delete the bucket key. With
//     CommitManifest's compare on the bucket key this makes "no manifest outlives its
//     bucket" hold under any interleaving. Its uploads in progress are deleted
//     first (DeleteUpload each) and the Txn also requires none under the
//     bucket's upload prefix: with CreateUpload's compare on the bucket key, no
//     upload outlives its bucket either.
//   - CreateBucket, CreatePGTable: put if absent.
//   - PutDisk, SetDiskState, ChangeDisk: read, modify, put if the mod revision is
//     unchanged; retried.
//
// Liveness entries are keys attached to etcd leases (KeepAlive); elections
// use go.etcd.io/etcd/client/v3/concurrency (one session, i.e. one lease,
// per won Campaign, with Options.SessionTTL).
//
// Members (members.go): Store.Members reads the member list and every
// member's status and judges them (Judge: down members, quorum, leader,
// lag, alarms); AddMember and RemoveMember change the membership
// (docs/design/meta.md, "Members"; docs/meta-members.md).
//
// Backup and restore (backup.go): Store.Backup streams etcd's consistent
// snapshot of the whole keyspace; Restore rebuilds a stopped member's data
// directory from one with etcd's snapshot restore (docs/design/meta.md,
// "Backup and restore").
//
// Transport security and authentication (auth.go; docs/design/meta.md):
// EmbedConfig.TLS serves clients and peers over TLS only and requires a
// client certificate of the cluster CA from both. EnableAuth turns etcd
// authentication on with two users: RootUser, without a password (etcd
// needs it to exist), and User ("cairn"), whose password every cairn
// process gives (Options.Username/Password). A request without a token
// is etcd's by the CommonName of its client certificate, so no
// certificate cairn makes has a CommonName that is a user's.
//
// Logging: etcd logs through zap; both the embedded server and the client
// get a zap logger that forwards records at error level and above to the
// *slog.Logger given (or drops them). Nothing is written to stdout.
//
// Caveats:
//   - A call that fails with an infrastructure error (a member died, ctx
//     ended) may or may not have been applied. CommitManifest is idempotent
//     per version, so retrying it is the way to find out.
//   - etcd's request size limit (1.5 MiB by default, MaxRequestBytes for
//     an embedded member) bounds one commit, so a manifest is at most
//     meta.MaxManifestBytes; its database quota (2 GiB by default,
//     EmbedConfig.QuotaBackendBytes) bounds the object count. A multipart
//     object's parts are records of their own (mparts.go), and every
//     object has a listing record beside its manifest (listing.go), and
//     every upload an index record by key beside its record (upkeys.go);
//     every listing reads pages of at most meta.MaxPage keys
//     (docs/design/meta.md, "Paging and limits"). History is compacted hourly by the embedded
//     server; nothing defragments the database.
//   - The minimum lease TTL is 1.5 election timeouts rounded up to whole
//     seconds (2 s with the default 1 s election timeout): KeepAlive and
//     SessionTTL round up to it.
//   - Server.Close ends the clients' streams (watches, keep-alives; their
//     clients reconnect elsewhere) and waits for in-flight unary requests
//     for up to etcd's request timeout (about 7 s by default); close the
//     process's own stores first.
//   - ListManifests with a limit < 1 reads all pages at one revision; a
//     listing that outlives the compaction retention (1 h) fails.
//   - A write moves one counter key per disk it touches, and a multipart
//     commit puts one record per part; etcd's --max-txn-ops (128 by
//     default; MaxTxnOps for an embedded member) bounds both.
//   - Open upgrades a store of key layout 1 by counting every manifest and
//     part once, and one of layout 2 by writing every object's listing
//     record; writes by processes of the old layout meanwhile are missed,
//     so every process is upgraded at once.
package etcdmeta
