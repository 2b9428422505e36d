package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"cairn/internal/cmdline"
	etcdmeta "cairn/meta/etcd"
)

// metaChangeTimeout bounds each etcd call of a membership change.
const metaChangeTimeout = 10 * time.Second

func runAdminMeta(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin meta", `Change the members of the metadata cluster (etcd).

'cairn admin status' shows the members, the leader and the quorum. To
replace a member: remove it, then add the new one and start it with the
command 'add' prints (docs/meta-members.md has the whole procedure).`, []cmdline.Command{
		{Name: "add", Summary: "add a member and print the command that starts it", Run: runMetaAdd},
		{Name: "remove", Summary: "remove a member (by name or ID) from the cluster", Run: runMetaRemove},
	}, args, stdout, stderr)
}

// metaStore is the etcd store a membership command needs.
func metaStore(cl *cluster) (*etcdmeta.Store, error) {
	s, ok := cl.meta.(*etcdmeta.Store)
	if !ok {
		return nil, fmt.Errorf("the metadata store is %T, not etcd", cl.meta)
	}
	return s, nil
}

func runMetaAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin meta add", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin meta add NAME PEER-ADDR", `Adds a member named NAME whose peers reach it at PEER-ADDR (HOST:PORT, as
'cairn meta --peer-addr' takes it, or an http://, https:// or unix:// URL)
and prints the command that starts it. The cluster counts the new member in
its quorum at once: start it right away, on its host, with an empty data
directory. Then add its client address to the clients' configuration.`)
	check := func() (clusterOptions, error) {
		if _, err := memberPeerURL(fs.Arg(0), fs.Arg(1), "http"); err != nil {
			return clusterOptions{}, err
		}
		return clusterOptions{log: logger(stderr, false)}, nil
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 2, 2, check, func(ctx context.Context, cl *cluster, args []string) error {
		s, err := metaStore(cl)
		if err != nil {
			return err
		}
		name := args[0]
		// A cluster whose clients reach it over TLS has its peers on TLS
		// too (cairn init, cairn server --tls).
		scheme, tlsFlags := "http", ""
		if eps := s.Client().Endpoints(); len(eps) > 0 && strings.HasPrefix(eps[0], "https://") {
			scheme = "https"
			tlsFlags = " \\\n    --tls-ca tls/ca.pem --tls-cert tls/host.pem --tls-key tls/host-key.pem --cairn-password-file meta-password"
		}
		peer, _ := memberPeerURL(name, args[1], scheme)
		a, err := s.AddMember(ctx, name, peer, metaChangeTimeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, `added metadata member %s (%s) at %s.
The cluster counts it in its quorum now: start it on its host, with an empty data directory:

  cairn meta --name %s --data DIR --peer-addr %s --client-addr HOST:PORT \
    --initial-cluster '%s' --initial-cluster-state existing%s

then add %s://HOST:PORT to the clients' metadata endpoints (client.conf, --meta).
`, a.Name, a.ID, a.PeerURL, a.Name, args[1], a.InitialCluster, tlsFlags, scheme)
		return nil
	})
}

// memberPeerURL checks a member's name and peer address and returns the
// peer URL: HOST:PORT becomes SCHEME://HOST:PORT.
func memberPeerURL(name, addr, scheme string) (string, error) {
	if name == "" || strings.ContainsAny(name, "=, \t\n") {
		return "", fmt.Errorf("%w: member name %q: want a non-empty name without '=', ',' or spaces", ErrUsage, name)
	}
	u := addr
	if !strings.Contains(addr, "://") {
		u = scheme + "://" + addr
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("%w: peer address %q: %v", ErrUsage, addr, err)
	}
	switch {
	case p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "unix":
		return "", fmt.Errorf("%w: peer address %q: scheme %q, want http, https or unix", ErrUsage, addr, p.Scheme)
	case p.Hostname() == "" || p.Port() == "":
		return "", fmt.Errorf("%w: peer address %q: want HOST:PORT", ErrUsage, addr)
	case p.Port() == "0":
		return "", fmt.Errorf("%w: peer address %q: port 0 cannot be known by the other members before the new one starts", ErrUsage, addr)
	case p.Path != "" && p.Path != "/":
		return "", fmt.Errorf("%w: peer address %q: a peer URL has no path", ErrUsage, addr)
	}
	return p.Scheme + "://" + p.Host, nil
}

func runMetaRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin meta remove", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin meta remove NAME|ID", `Removes a member from the metadata cluster (by its name or its hex ID, as
'cairn admin status' shows them). The member, if it runs, stops. etcd
refuses a removal that would leave too few running members for a quorum.
Delete the removed member's data directory before it is used again, and
drop its client address from the clients' configuration.`)
	check := func() (clusterOptions, error) {
		if fs.Arg(0) == "" {
			return clusterOptions{}, fmt.Errorf("%w: empty member name", ErrUsage)
		}
		return clusterOptions{log: logger(stderr, false)}, nil
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 1, 1, check, func(ctx context.Context, cl *cluster, args []string) error {
		s, err := metaStore(cl)
		if err != nil {
			return err
		}
		m, left, err := s.RemoveMember(ctx, args[0], metaChangeTimeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed metadata member %s (%x), peer URLs %s; it stops by itself if it runs.\n", m.Name, m.ID, strings.Join(m.PeerURLs, ","))
		var names []string
		voters := 0
		for _, o := range left {
			names = append(names, o.Name)
			if !o.Learner {
				voters++
			}
		}
		slices.Sort(names)
		quorum := voters/2 + 1
		fmt.Fprintf(stdout, "the cluster has %s (%s), quorum %d: it survives the loss of %s",
			plural(voters, "member"), strings.Join(names, ", "), quorum, plural(voters-quorum, "member"))
		if voters%2 == 0 {
			fmt.Fprint(stdout, "; one more member would survive one more loss (cairn admin meta add)")
		}
		fmt.Fprintln(stdout)
		return nil
	})
}
