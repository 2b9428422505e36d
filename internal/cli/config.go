package cli

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	etcdmeta "cairn/meta/etcd"
	"cairn/node"
)

// ClientConfig is what a CLI or gateway needs to reach a cluster. `cairn
// init DIR` and `cairn server --data DIR` write it to DIR/client.conf.
type ClientConfig struct {
	// Meta lists the metadata (etcd) client endpoints, e.g.
	// "http://127.0.0.1:9379".
	Meta []string `json:"meta"`
	// Secret is the cluster secret: node-protocol keys are derived from
	// it, and it seals the S3 users' secret keys. A CLI user's config may
	// instead hold only NodeKey.
	Secret string `json:"secret,omitempty"`
	// NodeKey, instead of Secret, is one derived node-protocol key
	// (node.Key.String, made by `cairn admin node-key`): the config can
	// make only that key's role's node requests (docs/design/node-protocol.md,
	// "Keys and roles") and none of what needs the secret.
	NodeKey string `json:"node_key,omitempty"`
	// NodeTLS, if set, makes the node-protocol calls over mutual TLS: the
	// nodes of a cluster started with cairn server --tls take only
	// clients with a certificate of its CA.
	NodeTLS *NodeTLSFiles `json:"node_tls,omitempty"`
	// MetaTLS, if set, makes the metadata (etcd) calls over TLS: the
	// client trusts CA and presents Cert, which etcd requires
	// (docs/design/meta.md, "Transport security and authentication").
	// https metadata endpoints need it.
	MetaTLS *NodeTLSFiles `json:"meta_tls,omitempty"`
	// MetaUser, if set, is the etcd user the client authenticates as
	// (etcdmeta.User), with the password derived from Secret
	// (metaPassword).
	MetaUser string `json:"meta_user,omitempty"`

	// path is the file the config was read from ("" if none), for errors.
	path string
}

// NodeTLSFiles are the PEM files of a node-protocol or metadata client:
// the cluster CA it trusts and the certificate and key it presents.
type NodeTLSFiles struct {
	CA   string `json:"ca"`
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Validate checks the config.
func (c *ClientConfig) Validate() error {
	if len(c.Meta) == 0 {
		return errors.New("config has no metadata endpoints (\"meta\")")
	}
	switch {
	case c.Secret == "" && c.NodeKey == "":
		return errors.New("config has no cluster secret (\"secret\") and no node key (\"node_key\")")
	case c.Secret != "" && c.NodeKey != "":
		return errors.New("config has both a cluster secret (\"secret\") and a node key (\"node_key\"): give one")
	case c.NodeKey != "" && c.MetaUser != "":
		return fmt.Errorf("config has a node key (\"node_key\") and the etcd user %q (\"meta_user\"), whose password is derived from the cluster secret, which it does not hold", c.MetaUser)
	case c.NodeKey != "":
		if _, err := node.ParseKey(c.NodeKey); err != nil {
			return fmt.Errorf("\"node_key\": %w", err)
		}
	}
	for _, ep := range c.Meta {
		if strings.HasPrefix(ep, "https://") && c.MetaTLS == nil {
			return fmt.Errorf("metadata endpoint %s is https, but the config has no \"meta_tls\" (the CA and client certificate etcd requires)", ep)
		}
	}
	return nil
}

// clientConfigKeys are the keys of a client config: a node's and a
// gateway's role config holds them beside the command's flags.
var clientConfigKeys = []string{"meta", "secret", "node_tls", "meta_tls", "meta_user"}

// metaOptions are the etcd client options of c: its TLS and its user.
func (c ClientConfig) metaOptions() (etcdmeta.Options, error) {
	var o etcdmeta.Options
	if c.MetaTLS != nil {
		tc, err := c.MetaTLS.clientConfig("meta_tls")
		if err != nil {
			return o, err
		}
		o.TLS = tc
	}
	if c.MetaUser != "" {
		o.Username, o.Password = c.MetaUser, metaPassword(c.Secret)
	}
	return o, nil
}

// metaPasswordMessage is the fixed string whose HMAC under the cluster
// secret is the etcd password of user cairn (docs/design/meta.md,
// "Transport security and authentication").
const metaPasswordMessage = "cairn etcd password v1"

// metaPassword is the etcd password of user cairn: the hex HMAC-SHA256 of
// metaPasswordMessage keyed with the cluster secret. Whoever holds the
// secret can compute it; a metadata member, which does not hold the
// secret, gets it in a file (cairn meta --cairn-password-file).
func metaPassword(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(metaPasswordMessage))
	return hex.EncodeToString(m.Sum(nil))
}

const configEnv = "CAIRN_CONFIG"

// configFlag adds --config to fs and returns a loader that reads the file
// it names, or $CAIRN_CONFIG.
func configFlag(fs *flag.FlagSet) func() (ClientConfig, error) {
	path := fs.String("config", "", "cluster config file written by cairn init or cairn server (DIR/client.conf); default $"+configEnv)
	return func() (ClientConfig, error) {
		p := *path
		if p == "" {
			p = os.Getenv(configEnv)
		}
		if p == "" {
			return ClientConfig{}, fmt.Errorf("%w: no cluster config: pass --config DIR/client.conf (written by `cairn init DIR` or `cairn server --data DIR`) or set %s", ErrUsage, configEnv)
		}
		return loadClientConfig(p)
	}
}

// readJSONFile decodes the JSON file at path into v.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading cluster config: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("cluster config %s: %w", path, err)
	}
	return nil
}

func loadClientConfig(path string) (ClientConfig, error) {
	var c ClientConfig
	if err := readJSONFile(path, &c); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("cluster config %s: %w", path, err)
	}
	c.path = path
	c.resolvePaths(filepath.Dir(path))
	return c, nil
}

// resolvePaths makes the relative file names of c's TLS files relative to
// dir, the directory of the config file that names them (cairn init
// writes tls/ca.pem and so on next to each client.conf).
func (c *ClientConfig) resolvePaths(dir string) {
	for _, f := range []*NodeTLSFiles{c.NodeTLS, c.MetaTLS} {
		if f == nil {
			continue
		}
		for _, p := range []*string{&f.CA, &f.Cert, &f.Key} {
			*p = besideConfig(dir, *p)
		}
	}
}

// besideConfig is file p named in a config file in dir: p itself if
// absolute or empty, else p in dir.
func besideConfig(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// writeClientConfig writes c to path atomically with mode 0600 (it holds
// the cluster secret).
func writeClientConfig(path string, c ClientConfig) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
