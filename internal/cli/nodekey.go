package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"cairn/internal/cmdline"
	"cairn/node"
)

// runAdminNodeKey prints a client config that holds one derived node key
// instead of the cluster secret (docs/design/node-protocol.md, "Keys and
// roles").
func runAdminNodeKey(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin node-key", flag.ContinueOnError)
	load := configFlag(fs)
	var roles []string
	for _, r := range node.Roles {
		roles = append(roles, string(r))
	}
	role := fs.String("role", "", "the key's role: "+strings.Join(roles, ", ")+" (required)")
	name := fs.String("name", "", "the key's principal, e.g. a user or host name: 1 to 64 of A-Z a-z 0-9 . _ @ ~ + - (required)")
	cmdline.Usage(fs, "cairn admin node-key --config CLIENT.CONF --role ROLE --name NAME > USER.CONF",
		"Prints a client config for one user or process that holds, instead of the cluster secret, a node-protocol\n"+
			"key derived from it for ROLE/NAME: with it, a CLI can make only that role's node requests (a reader:\n"+
			"read shards, list and stat disks) and nothing that needs the secret (S3 users, gateways). Keep the\n"+
			"output as secret as a password. The key stays valid until the cluster secret changes.\n"+
			"Roles: admin (every request), director (repair, cleanup, GC), gateway (put, get,\n"+
			"delete shards), node (a node's repair traffic), reader (get shards, list, stat).")
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *role == "" || *name == "" {
		return fmt.Errorf("%w: cairn admin node-key needs --role and --name", ErrUsage)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if cfg.Secret == "" {
		return fmt.Errorf("%w: %s holds no cluster secret: deriving keys needs the secret (the admin's client.conf)", ErrUsage, cfg.path)
	}
	key, err := node.DeriveKey(cfg.Secret, node.KeyID{Role: node.Role(*role), Name: *name})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	b, err := json.MarshalIndent(ClientConfig{Meta: cfg.Meta, NodeKey: key.String()}, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	if cfg.NodeTLS != nil {
		fmt.Fprintln(stderr, "the cluster's nodes take mutual TLS only: add \"node_tls\" to this config with a client certificate of the cluster CA for this user")
	}
	if cfg.MetaTLS != nil {
		fmt.Fprintln(stderr, "the cluster's metadata store takes TLS clients only: add \"meta_tls\" to this config with a client certificate of the cluster CA for this user")
	}
	if cfg.MetaUser != "" {
		fmt.Fprintf(stderr, "the cluster's metadata store requires the etcd user %s, whose password is derived from the cluster secret: this config cannot reach it (etcd users for derived keys are not made yet)\n", cfg.MetaUser)
	}
	return nil
}
