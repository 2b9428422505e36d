package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/crypt"
	"cairn/internal/cmdline"
	"cairn/layout/gp"
	"cairn/meta"
	"cairn/s3"
)

// `cairn admin user`: the S3 users of the metadata store (docs/design/s3.md,
// "Users and keys"). Every command writes the store directly (it needs the
// cluster secret of client.conf to seal secrets); every gateway serves the
// change within its --users-refresh.

// rootName is the owner name of the flags' root identity
// (s3.RootCredentials): a user of that name owns root's buckets, so only
// a root user may have it.
const rootName = "root"

// userStore is the part of meta.Store the user commands use.
type userStore interface {
	CreateUser(ctx context.Context, u cairn.User) error
	User(ctx context.Context, name string) (cairn.User, error)
	UpdateUser(ctx context.Context, u, prev cairn.User) error
	DeleteUser(ctx context.Context, name string) error
	Users(ctx context.Context, after string, limit int) ([]cairn.User, bool, error)
	UserDefaults(ctx context.Context) (cairn.UserDefaults, error)
	PutUserDefaults(ctx context.Context, d cairn.UserDefaults) error
}

// userAdmin runs the user commands against a store.
type userAdmin struct {
	st   userStore
	seal []byte           // crypt.UserSealKey of the cluster secret
	now  func() time.Time // the records' Created and Updated
	rand io.Reader        // new keys and nonces
	out  io.Writer
}

// newKeyPair makes an access key ("CAIRN" + 16 upper-case hex digits) and
// a secret key (44 hex digits) from r.
func newKeyPair(r io.Reader) (s3Creds, error) {
	var b [30]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return s3Creds{}, err
	}
	return s3Creds{AccessKey: "CAIRN" + strings.ToUpper(hex.EncodeToString(b[:8])), SecretKey: hex.EncodeToString(b[8:])}, nil
}

// parsePolicies parses a comma-separated list of policies, each checked
// by the codec registry; "" is none.
func parsePolicies(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if err := gp.Check(p); err != nil {
			return nil, fmt.Errorf("policy %q: %w", p, err)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) > cairn.MaxUserPolicies {
		return nil, fmt.Errorf("%d policies, at most %d", len(out), cairn.MaxUserPolicies)
	}
	return out, nil
}

// checkKeys checks a user's keys as given on the command line or in a
// users file.
func checkKeys(c s3Creds) error {
	if err := cairn.ValidateAccessKey(c.AccessKey); err != nil {
		return err
	}
	if len(c.SecretKey) < 8 || len(c.SecretKey) > 128 {
		return fmt.Errorf("the secret key must be 8 to 128 characters")
	}
	return nil
}

// record makes the stored record of a user with keys c.
func (a userAdmin) record(name string, c s3Creds, root bool, policies []string) (cairn.User, error) {
	sealed, err := crypt.SealSecret(a.seal, name, c.AccessKey, c.SecretKey, a.rand)
	if err != nil {
		return cairn.User{}, err
	}
	now := a.now().UTC()
	return cairn.User{Name: name, AccessKey: c.AccessKey, SealedSecret: sealed, Root: root, Policies: policies,
		Created: now, Updated: now}, nil
}

// add creates a user with keys c (new ones if c is zero) and prints them.
func (a userAdmin) add(ctx context.Context, name string, c s3Creds, root bool, policies []string) error {
	if err := cairn.ValidateUserName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if name == rootName && !root {
		return fmt.Errorf("%w: the name %q is the owner of the root identity's buckets: only a --root user may have it", ErrUsage, rootName)
	}
	if c == (s3Creds{}) {
		var err error
		if c, err = newKeyPair(a.rand); err != nil {
			return err
		}
	} else if err := checkKeys(c); err != nil {
		return fmt.Errorf("%w: user %s: %v", ErrUsage, name, err)
	}
	u, err := a.record(name, c, root, policies)
	if err != nil {
		return err
	}
	if err := a.st.CreateUser(ctx, u); err != nil {
		if errors.Is(err, cairn.ErrExists) {
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
		return err
	}
	a.printKeys(name, c, "added")
	return nil
}

func (a userAdmin) printKeys(name string, c s3Creds, what string) {
	fmt.Fprintf(a.out, "user %s %s; its secret key is shown only now:\n", name, what)
	fmt.Fprintf(a.out, "access key: %s\nsecret key: %s\n", c.AccessKey, c.SecretKey)
}

// change applies f to the stored record of name with compare-and-swap,
// reading again when another change won (at most 5 times).
func (a userAdmin) change(ctx context.Context, name string, f func(*cairn.User) error) (cairn.User, error) {
	for range 5 {
		prev, err := a.st.User(ctx, name)
		if errors.Is(err, cairn.ErrNotFound) {
			return prev, fmt.Errorf("%w: there is no user %q", ErrUsage, name)
		}
		if err != nil {
			return prev, err
		}
		u := prev
		u.Policies = slices.Clone(prev.Policies)
		if err := f(&u); err != nil {
			return u, err
		}
		u.Updated = a.now().UTC()
		err = a.st.UpdateUser(ctx, u, prev)
		if !errors.Is(err, cairn.ErrConflict) {
			return u, err
		}
	}
	return cairn.User{}, fmt.Errorf("user %s: %w: changed by someone else 5 times in a row", name, cairn.ErrConflict)
}

// rotate gives a user a new access key and secret; the old ones stop
// working on every gateway within its --users-refresh.
func (a userAdmin) rotate(ctx context.Context, name string) error {
	var c s3Creds
	_, err := a.change(ctx, name, func(u *cairn.User) error {
		var err error
		if c, err = newKeyPair(a.rand); err != nil {
			return err
		}
		u.AccessKey = c.AccessKey
		u.SealedSecret, err = crypt.SealSecret(a.seal, u.Name, c.AccessKey, c.SecretKey, a.rand)
		return err
	})
	if err != nil {
		return err
	}
	a.printKeys(name, c, "has new keys (the old ones no longer work)")
	return nil
}

// setPolicy replaces a user's allow-list (nil: the gateways').
func (a userAdmin) setPolicy(ctx context.Context, name string, policies []string) error {
	if _, err := a.change(ctx, name, func(u *cairn.User) error { u.Policies = policies; return nil }); err != nil {
		return err
	}
	if len(policies) == 0 {
		fmt.Fprintf(a.out, "user %s may choose the gateways' allowed policies (--allow-policies)\n", name)
	} else {
		fmt.Fprintf(a.out, "user %s may choose: %s\n", name, strings.Join(policies, ", "))
	}
	return nil
}

// setDefaultPolicy replaces the cluster's allow-list of users without one
// of their own (nil: each gateway's --allow-policies).
func (a userAdmin) setDefaultPolicy(ctx context.Context, policies []string) error {
	if err := a.st.PutUserDefaults(ctx, cairn.UserDefaults{Policies: policies, Updated: a.now().UTC()}); err != nil {
		return err
	}
	if len(policies) == 0 {
		fmt.Fprintln(a.out, "users without a list of their own may choose the gateways' allowed policies (--allow-policies)")
	} else {
		fmt.Fprintf(a.out, "users without a list of their own may choose: %s\n", strings.Join(policies, ", "))
	}
	return nil
}

// remove deletes a user; its keys stop working on every gateway within
// its --users-refresh.
func (a userAdmin) remove(ctx context.Context, name string) error {
	err := a.st.DeleteUser(ctx, name)
	if errors.Is(err, cairn.ErrNotFound) {
		return fmt.Errorf("%w: there is no user %q", ErrUsage, name)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "user %s removed\n", name)
	return nil
}

// UserInfo is one user in `cairn admin user list --json` (no secret).
type UserInfo struct {
	Name      string    `json:"name"`
	AccessKey string    `json:"access_key"`
	Root      bool      `json:"root,omitempty"`
	Policies  []string  `json:"policies,omitempty"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
}

// list prints every user, a page at a time.
func (a userAdmin) list(ctx context.Context, asJSON bool) error {
	var all []UserInfo
	after := ""
	for {
		us, more, err := a.st.Users(ctx, after, meta.MaxPage)
		if err != nil {
			return err
		}
		for _, u := range us {
			after = u.Name
			all = append(all, UserInfo{Name: u.Name, AccessKey: u.AccessKey, Root: u.Root, Policies: u.Policies, Created: u.Created, Updated: u.Updated})
		}
		if !more || len(us) == 0 {
			break
		}
	}
	if asJSON {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		if all == nil {
			all = []UserInfo{}
		}
		return enc.Encode(all)
	}
	tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tACCESS KEY\tROOT\tPOLICIES\tUPDATED")
	for _, u := range all {
		pol := strings.Join(u.Policies, ",")
		if pol == "" {
			pol = "(gateway's)"
		}
		root := ""
		if u.Root {
			root = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.AccessKey, root, pol, u.Updated.Format(time.RFC3339))
	}
	return tw.Flush()
}

// importFile creates the users of a users file (--users FILE's format)
// in the store with their keys. A user that exists (by name or access
// key) is reported and skipped; the error says how many were.
func (a userAdmin) importFile(ctx context.Context, path string) error {
	f, err := readUsersFile(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	var failed []string
	added := 0
	for i, fu := range f.Users {
		c := s3Creds{AccessKey: fu.AccessKey, SecretKey: fu.SecretKey}
		if err := cairn.ValidateUserName(fu.Name); err != nil {
			return fmt.Errorf("%w: users file %s: user %d: %v", ErrUsage, path, i+1, err)
		}
		if fu.Name == rootName {
			return fmt.Errorf("%w: users file %s: the name %q is root's", ErrUsage, path, rootName)
		}
		if err := checkKeys(c); err != nil {
			return fmt.Errorf("%w: users file %s: user %s: %v", ErrUsage, path, fu.Name, err)
		}
		pol, err := parsePolicies(strings.Join(fu.Policies, ","))
		if err != nil {
			return fmt.Errorf("%w: users file %s: user %s: %w", ErrUsage, path, fu.Name, err)
		}
		u, err := a.record(fu.Name, c, false, pol)
		if err != nil {
			return err
		}
		switch err := a.st.CreateUser(ctx, u); {
		case errors.Is(err, cairn.ErrExists):
			fmt.Fprintf(a.out, "user %s: skipped: %v\n", fu.Name, err)
			failed = append(failed, fu.Name)
		case err != nil:
			return fmt.Errorf("importing user %s (%d imported before it): %w", fu.Name, added, err)
		default:
			fmt.Fprintf(a.out, "user %s imported (access key %s)\n", fu.Name, fu.AccessKey)
			added++
		}
	}
	fmt.Fprintf(a.out, "%d users imported from %s\n", added, path)
	if len(failed) > 0 {
		return fmt.Errorf("%d users not imported, their name or access key exists: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// userOp is one user command with its arguments: run on the store
// (userAdmin.do), sent to a gateway's admin path (sendUserOp), or
// received there (userAdminHandler).
type userOp struct {
	Op       string   // add, rm, list, set-policy, rotate, default-policy
	Name     string   // all but list and default-policy
	Root     bool     // add
	Policies []string // add, set-policy, default-policy (nil with the last two: clear)
	Keys     s3Creds  // add: given keys (zero: new ones); never sent to a gateway
	JSON     bool     // list
}

// do runs op on the store.
func (a userAdmin) do(ctx context.Context, op userOp) error {
	switch op.Op {
	case "add":
		return a.add(ctx, op.Name, op.Keys, op.Root, op.Policies)
	case "rm":
		return a.remove(ctx, op.Name)
	case "list":
		return a.list(ctx, op.JSON)
	case "set-policy":
		return a.setPolicy(ctx, op.Name, op.Policies)
	case "rotate":
		return a.rotate(ctx, op.Name)
	case "default-policy":
		return a.setDefaultPolicy(ctx, op.Policies)
	}
	return fmt.Errorf("%w: unknown user operation %q", ErrUsage, op.Op)
}

// query encodes op for the admin path (docs/design/s3.md, "Users and
// keys"): cairn-admin=user-OP, name, root, policies, json.
func (op userOp) query() url.Values {
	q := url.Values{s3.AdminQuery: {"user-" + op.Op}}
	if op.Name != "" {
		q.Set("name", op.Name)
	}
	if op.Root {
		q.Set("root", "true")
	}
	if len(op.Policies) > 0 {
		q.Set("policies", strings.Join(op.Policies, ","))
	}
	if op.JSON {
		q.Set("json", "true")
	}
	return q
}

// parseUserOp decodes what query encoded.
func parseUserOp(q url.Values) (userOp, error) {
	op := userOp{Name: q.Get("name"), Root: q.Get("root") == "true", JSON: q.Get("json") == "true"}
	name, ok := strings.CutPrefix(q.Get(s3.AdminQuery), "user-")
	if !ok {
		return op, fmt.Errorf("%w: unknown admin operation %q", ErrUsage, q.Get(s3.AdminQuery))
	}
	op.Op = name
	pol, err := parsePolicies(q.Get("policies"))
	if err != nil {
		return op, fmt.Errorf("%w: policies: %w", ErrUsage, err)
	}
	op.Policies = pol
	return op, nil
}

// userAdminHandler is a gateway's admin path for users (s3.Config.Admin):
// the gateway has checked that root signed the request. It answers with
// what the CLI would print: 200, 400 for a usage error (a bad argument,
// an unknown or existing user), 503 if the store is unavailable, else 500.
type userAdminHandler struct {
	admin userAdmin // out is ignored: each request writes to its own buffer
	// changed, if set, runs after a change succeeded (the gateway re-reads
	// its users at once rather than at its next refresh).
	changed func(ctx context.Context) error
}

func (h userAdminHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	op, err := parseUserOp(r.URL.Query())
	var out bytes.Buffer
	if err == nil {
		a := h.admin
		a.out = &out
		err = a.do(r.Context(), op)
	}
	if err == nil && op.Op != "list" && h.changed != nil {
		_ = h.changed(r.Context()) // the next refresh retries
	}
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
		w.Write(out.Bytes())
		return
	case errors.Is(err, ErrUsage):
		w.WriteHeader(http.StatusBadRequest)
	case errors.Is(err, cairn.ErrUnavailable):
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusInternalServerError)
	}
	io.WriteString(w, strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")+"\n")
}

// sendUserOp runs op through the admin path of the gateway at endpoint
// (http://host:port, or https: trusting $AWS_CA_BUNDLE if set, as the
// aws CLI does), signed by root, and copies the answer to stdout. A
// refusal is an error with the gateway's text; a 400 a usage error.
func sendUserOp(ctx context.Context, endpoint string, root s3Creds, op userOp, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: --endpoint %q: want http://HOST:PORT or https://HOST:PORT", ErrUsage, endpoint)
	}
	u.Path, u.RawQuery = "/", op.query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return err
	}
	s3.SignV4(req, root.AccessKey, root.SecretKey, "us-east-1", time.Now())
	hc, err := caBundleClient()
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("the admin path of %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("the admin path of %s: %w", endpoint, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		_, err := stdout.Write(body)
		return err
	case resp.StatusCode == http.StatusBadRequest && resp.Header.Get("Content-Type") != "application/xml":
		return fmt.Errorf("%w: %s", ErrUsage, strings.TrimSpace(string(body)))
	}
	return fmt.Errorf("the admin path of %s answered %s: %s", endpoint, resp.Status, strings.TrimSpace(string(body)))
}

// runUserOp parses a user command's flags (--config, or --endpoint with
// root's keys) and lo to hi arguments, builds its userOp and runs it on
// the store or through a gateway.
func runUserOp(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, lo, hi int,
	build func(args []string) (userOp, error)) error {
	endpoint := fs.String("endpoint", "", "send the command to this gateway's admin path (http://HOST:PORT), signed with root's keys, instead of writing the metadata store (which needs --config)")
	rootAK := fs.String("root-access-key", "", "with --endpoint: a root S3 access key (default $CAIRN_ACCESS_KEY)")
	rootSK := fs.String("root-secret-key", "", "with --endpoint: its secret key (default $CAIRN_SECRET_KEY)")
	load := configFlag(fs)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, true); err != nil {
		return err
	}
	if n := fs.NArg(); n < lo || n > hi {
		fs.SetOutput(stderr)
		fs.Usage()
		want := fmt.Sprint(lo)
		if hi > lo {
			want = fmt.Sprintf("%d to %d", lo, hi)
		}
		return fmt.Errorf("%w: %s takes %s argument(s), got %d", ErrUsage, fs.Name(), want, n)
	}
	op, err := build(fs.Args())
	if err != nil {
		return err
	}
	if *endpoint != "" {
		root := s3Creds{AccessKey: cmp.Or(*rootAK, os.Getenv("CAIRN_ACCESS_KEY")), SecretKey: cmp.Or(*rootSK, os.Getenv("CAIRN_SECRET_KEY"))}
		switch {
		case root.AccessKey == "" || root.SecretKey == "":
			return fmt.Errorf("%w: --endpoint needs root's keys: --root-access-key and --root-secret-key, or $CAIRN_ACCESS_KEY and $CAIRN_SECRET_KEY", ErrUsage)
		case op.Keys != (s3Creds{}):
			return fmt.Errorf("%w: --access-key and --secret-key go only to the metadata store (--config), never over the network", ErrUsage)
		}
		return sendUserOp(ctx, *endpoint, root, op, stdout)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	cl, err := openCluster(ctx, cfg, clusterOptions{log: logger(stderr, false)})
	if err != nil {
		return err
	}
	defer cl.Close()
	a, err := newUserAdmin(cl, stdout)
	if err != nil {
		return err
	}
	return a.do(ctx, op)
}

// newUserAdmin is the userAdmin of a cluster: its store and its secret's
// sealing key.
func newUserAdmin(cl *cluster, out io.Writer) (userAdmin, error) {
	secret, err := cl.clusterSecret("cairn admin user")
	if err != nil {
		return userAdmin{}, err
	}
	seal, err := crypt.UserSealKey(secret)
	if err != nil {
		return userAdmin{}, err
	}
	return userAdmin{st: cl.meta, seal: seal, now: time.Now, rand: rand.Reader, out: out}, nil
}

func runAdminUser(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin user", "S3 users and keys, kept in the metadata store and served by every gateway\n(docs/design/s3.md, \"Users and keys\"). Changes reach every gateway within its --users-refresh.\nEach command writes the store (--config CLIENT.CONF) or goes through a gateway's admin path\n(--endpoint URL with root's keys).", []cmdline.Command{
		{Name: "add", Summary: "add a user; prints its access key and secret key", Run: runUserAdd},
		{Name: "rm", Summary: "remove a user: its keys stop working", Run: runUserRm},
		{Name: "list", Summary: "list the users (never their secrets)", Run: runUserList},
		{Name: "set-policy", Summary: "set the policies a user may choose with x-cairn-policy", Run: runUserSetPolicy},
		{Name: "rotate", Summary: "give a user new keys; the old ones stop working", Run: runUserRotate},
		{Name: "default-policy", Summary: "set the policies users without a list of their own may choose", Run: runUserDefaultPolicy},
		{Name: "import", Summary: "add the users of a users file (--users FILE's format)", Run: runUserImport},
	}, args, stdout, stderr)
}

func runUserAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user add", flag.ContinueOnError)
	root := fs.Bool("root", false, "the user sees and touches every bucket and may choose any policy")
	policies := fs.String("policies", "", "comma-separated policies the user may choose with x-cairn-policy (default: the gateways' --allow-policies)")
	ak := fs.String("access-key", "", "the new user's access key (default: a new random one)")
	sk := fs.String("secret-key", "", "the new user's secret key, 8 to 128 characters (default: a new random one, which is better: a flag shows in ps)")
	cmdline.Usage(fs, "cairn admin user add NAME [--root] [--policies P1,P2] [--access-key K --secret-key S] (--config CLIENT.CONF | --endpoint URL)",
		"Adds an S3 user to the metadata store and prints its keys; the secret key is stored sealed\nunder the cluster secret and shown only now.")
	return runUserOp(ctx, fs, args, stdout, stderr, 1, 1, func(args []string) (userOp, error) {
		pol, err := parsePolicies(*policies)
		if err != nil {
			return userOp{}, fmt.Errorf("%w: --policies: %w", ErrUsage, err)
		}
		if (*ak == "") != (*sk == "") {
			return userOp{}, fmt.Errorf("%w: give both --access-key and --secret-key, or neither", ErrUsage)
		}
		return userOp{Op: "add", Name: args[0], Root: *root, Policies: pol, Keys: s3Creds{AccessKey: *ak, SecretKey: *sk}}, nil
	})
}

func runUserRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user rm", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin user rm NAME (--config CLIENT.CONF | --endpoint URL)", "Removes an S3 user; its keys stop working on every gateway. Its buckets stay (root sees them).")
	return runUserOp(ctx, fs, args, stdout, stderr, 1, 1, func(args []string) (userOp, error) {
		return userOp{Op: "rm", Name: args[0]}, nil
	})
}

func runUserList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user list", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	cmdline.Usage(fs, "cairn admin user list [--json] (--config CLIENT.CONF | --endpoint URL)", "Lists the S3 users of the metadata store: name, access key, root, allowed policies.")
	return runUserOp(ctx, fs, args, stdout, stderr, 0, 0, func([]string) (userOp, error) {
		return userOp{Op: "list", JSON: *asJSON}, nil
	})
}

// policiesOrClear is the allow-list of set-policy and default-policy:
// the one argument of list, parsed, or none with --clear (nil).
func policiesOrClear(clear bool, list []string) ([]string, error) {
	switch {
	case clear && len(list) == 1:
		return nil, fmt.Errorf("%w: give policies or --clear, not both", ErrUsage)
	case !clear && len(list) == 0:
		return nil, fmt.Errorf("%w: give the policies (e.g. rs-4-2,rs-6-3), or --clear", ErrUsage)
	case clear:
		return nil, nil
	}
	pol, err := parsePolicies(list[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return pol, nil
}

func runUserSetPolicy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user set-policy", flag.ContinueOnError)
	clear := fs.Bool("clear", false, "drop the user's own list: it may choose the gateways' --allow-policies")
	cmdline.Usage(fs, "cairn admin user set-policy NAME P1[,P2...] | --clear NAME  (--config CLIENT.CONF | --endpoint URL)",
		"Sets the policies a user may choose for its buckets and objects with a signed x-cairn-policy\n(docs/design/s3.md, \"Choosing a policy\"). Root users may choose any.")
	return runUserOp(ctx, fs, args, stdout, stderr, 1, 2, func(args []string) (userOp, error) {
		pol, err := policiesOrClear(*clear, args[1:])
		return userOp{Op: "set-policy", Name: args[0], Policies: pol}, err
	})
}

func runUserDefaultPolicy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user default-policy", flag.ContinueOnError)
	clear := fs.Bool("clear", false, "drop the cluster's list: such users may choose each gateway's --allow-policies")
	cmdline.Usage(fs, "cairn admin user default-policy P1[,P2...] | --clear  (--config CLIENT.CONF | --endpoint URL)",
		"Sets, for the whole cluster, the policies a user without a list of its own ('set-policy') may choose\n"+
			"with a signed x-cairn-policy (docs/design/s3.md, \"Choosing a policy\"). Without one, each gateway's\n--allow-policies applies.")
	return runUserOp(ctx, fs, args, stdout, stderr, 0, 1, func(args []string) (userOp, error) {
		pol, err := policiesOrClear(*clear, args)
		return userOp{Op: "default-policy", Policies: pol}, err
	})
}

func runUserRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user rotate", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin user rotate NAME (--config CLIENT.CONF | --endpoint URL)", "Gives a user a new access key and secret key and prints them; the old keys stop working on every gateway.")
	return runUserOp(ctx, fs, args, stdout, stderr, 1, 1, func(args []string) (userOp, error) {
		return userOp{Op: "rotate", Name: args[0]}, nil
	})
}

func runUserImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin user import", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin user import FILE --config CLIENT.CONF", "Adds the users of a users file ("+`{"users":[{"name":..,"access_key":..,"secret_key":..}]}`+", the format of\n--users FILE) to the metadata store with their keys, so every gateway serves them. Users whose name or\naccess key exists are skipped (and the command fails, naming them).")
	return withClusterArgs(ctx, fs, args, stdout, stderr, 1, 1, func(ctx context.Context, cl *cluster, args []string) error {
		a, err := newUserAdmin(cl, stdout)
		if err != nil {
			return err
		}
		return a.importFile(ctx, args[0])
	})
}

// caBundleClient is an HTTP client that trusts the CA certificates in the
// file $AWS_CA_BUNDLE names, as the aws CLI does, or the system's if it
// is unset.
func caBundleClient() (*http.Client, error) {
	path := os.Getenv("AWS_CA_BUNDLE")
	if path == "" {
		return http.DefaultClient, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("$AWS_CA_BUNDLE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("$AWS_CA_BUNDLE: %s holds no PEM certificate", path)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}
