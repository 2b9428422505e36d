// Package proc starts cairn processes (`cairn server`, `meta`, `node`,
// `gateway`, or cairn-bench in those roles) for tests and experiments, waits
// until each is ready, and learns its addresses from what it printed.
//
// Vocabulary:
//
//   - The ready line: the line a cairn process prints on standard output once
//     every listener is bound and serving, after any human-readable lines:
//
//     cairn ROLE ready KEY=VALUE [KEY=VALUE ...]
//
//     ROLE is server, meta, node or gateway; the keys are sorted, and a
//     value has no spaces. Keys: s3 (the S3 API, http://HOST:PORT), meta
//     (metadata client URLs, comma-separated), peer (metadata peer URLs,
//     comma-separated), node (the node protocol, HOST:PORT), console
//     (the web console, http://HOST:PORT, when it is on) and metrics
//     (with --metrics-addr: HOST:PORT serving /metrics). Ready
//     formats it (internal/cli prints it) and ParseReady reads it.
//
//   - Port 0: every address flag of those commands accepts port 0; the
//     process binds first and prints the port the kernel gave it. There is
//     no "find a free port, close it, hand it to a child" step, which races
//     with every other process on the machine.
//
// Metadata members (etcd) are the one place where an address must be known
// before a process starts: a new multi-member cluster bootstraps from a
// static list of every member's peer URL. The choice:
//
//   - A client URL may have port 0: the member reports the bound one
//     (meta/etcd Server.Endpoints).
//   - A single member (`cairn server`, `cairn meta` alone, the experiments'
//     embedded etcd) binds its peer URL on port 0 too: nothing dials it.
//   - Members of a multi-member cluster started by tests get unix-socket peer
//     URLs, unix://NAME:PORT, which etcd (like its own integration tests)
//     binds as the socket file "NAME:PORT" in the working directory and
//     dials from there; testcluster starts every member in the cluster's
//     directory (Config.Dir). A file name in a private directory cannot be
//     taken by another process. Production members use configured ports.
//
// Caveats: a member started with port 0 advertises port 0 in etcd's member
// list (the advertised URLs are fixed before it binds), and etcd's HTTP/JSON
// gateway, which dials the configured client address, does not work on it.
// cairn's clients use the endpoints they are given, never the member list,
// and speak gRPC. On Linux a started process gets SIGKILL when the
// thread that started it dies (Pdeathsig), so a test or experiment that is
// killed leaves none behind; elsewhere they may outlive it.
//
// Usage:
//
//	p, err := proc.Start(ctx, proc.Config{Bin: bin,
//		Args: proc.NodeArgs("n1", metaURLs, secretFile, []string{dir})})
//	if err != nil { ... }
//	defer p.Kill()
//	addr := p.Addr(proc.Node)
package proc
