package node

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"cairn"
)

// Keys and roles (docs/design/node-protocol.md, "Keys and roles").
//
// Every request is signed under a key derived from the cluster secret for
// one principal, role/name: K = HMAC-SHA256(secret, "cairn key v1/" +
// role + "/" + name). The request names its key (Credential=role/name);
// the node, which holds the secret, derives the same key, verifies the
// signature and then checks that the role may make the request. A holder
// of a derived key can sign only as its principal: the role is in the key
// (and in the signed string), so a reader key cannot pass as a gateway.

// Role is what a key may do on a node.
type Role string

// The roles. Each may make the requests roleOps lists.
const (
	// RoleAdmin is an operator's CLI: every request.
	RoleAdmin Role = "admin"
	// RoleDirector coordinates repair, cleanup, GC and rebalancing:
	// push, pull, list, stat, put (an empty rebuilt shard, the fresh
	// blocks of an lt repair), delete, and get: an lt repair reads the
	// blocks it decodes (docs/design/lt.md, "Repair"). It was never a
	// confidentiality boundary: a push or pull sends rebuilt data to the
	// addresses its spec names.
	RoleDirector Role = "director"
	// RoleGateway is the S3 data path: put, get, delete shards, stat.
	RoleGateway Role = "gateway"
	// RoleNode is a node's own requests to other nodes in a repair:
	// forwarding partials (push), fetching helpers (get), storing and
	// removing rebuilt shards (put, delete).
	RoleNode Role = "node"
	// RoleReader may only read: get shards, list and stat disks.
	RoleReader Role = "reader"
)

// Roles lists the roles.
var Roles = []Role{RoleAdmin, RoleDirector, RoleGateway, RoleNode, RoleReader}

// op is a kind of request, as the role table names it.
type op string

const (
	opGet    op = "get"    // GET a shard
	opPut    op = "put"    // PUT a shard
	opDelete op = "delete" // DELETE a shard
	opList   op = "list"   // GET a disk's shards
	opStat   op = "stat"   // GET a disk
	opHealth op = "health" // GET /v1/health
	opPush   op = "push"   // POST /v1/push
	opPull   op = "pull"   // POST /v1/pull
	// opRAIDPRead reads a disk's RAIDP slots or Lstor parity: the data
	// path and the director's RAIDP recovery (docs/design/raidp.md).
	opRAIDPRead op = "raidp-read"
)

// roleOps is what each role may do. Every role may ask for health.
var roleOps = map[Role][]op{
	RoleAdmin:    {opGet, opPut, opDelete, opList, opStat, opHealth, opPush, opPull, opRAIDPRead},
	RoleDirector: {opGet, opPut, opDelete, opList, opStat, opHealth, opPush, opPull, opRAIDPRead},
	RoleGateway:  {opGet, opPut, opDelete, opStat, opHealth, opRAIDPRead},
	RoleNode:     {opGet, opPut, opDelete, opHealth, opPush, opRAIDPRead},
	RoleReader:   {opGet, opList, opStat, opHealth, opRAIDPRead},
}

// allows reports whether role may make requests of kind o.
func (r Role) allows(o op) bool { return slices.Contains(roleOps[r], o) }

// keyInfoPrefix starts the derivation string of every key.
const keyInfoPrefix = "cairn key v1/"

// maxKeyName bounds a principal's name.
const maxKeyName = 64

// KeyID names a key's principal: its role and a name (a node's ID, a
// gateway's host, a user), written role/name.
type KeyID struct {
	Role Role
	Name string
}

func (id KeyID) String() string { return string(id.Role) + "/" + id.Name }

// ParseKeyID parses role/name. Errors wrap cairn.ErrInvalid.
func ParseKeyID(s string) (KeyID, error) {
	role, name, ok := strings.Cut(s, "/")
	if !ok {
		return KeyID{}, fmt.Errorf("%w: key id %q: want ROLE/NAME", cairn.ErrInvalid, s)
	}
	id := KeyID{Role: Role(role), Name: name}
	return id, id.Validate()
}

// Validate checks that the role is known and the name is 1–64 of
// [A-Za-z0-9._@~+-]. Errors wrap cairn.ErrInvalid.
func (id KeyID) Validate() error {
	if _, ok := roleOps[id.Role]; !ok {
		return fmt.Errorf("%w: unknown role %q (roles: %s)", cairn.ErrInvalid, id.Role, roleList())
	}
	if id.Name == "" || len(id.Name) > maxKeyName {
		return fmt.Errorf("%w: key name %q: want 1 to %d characters", cairn.ErrInvalid, id.Name, maxKeyName)
	}
	for i := 0; i < len(id.Name); i++ {
		if !nameByte(id.Name[i]) {
			return fmt.Errorf("%w: key name %q: %q is not one of A-Z a-z 0-9 . _ @ ~ + -", cairn.ErrInvalid, id.Name, id.Name[i])
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._@~+-", c) >= 0
}

// KeyName turns s (a node ID, a host name) into a valid key name: bytes
// outside the name alphabet become '-', and it is cut to 64 bytes; ""
// becomes "unnamed". The name only labels the principal; two principals
// whose names map to the same key name share a key.
func KeyName(s string) string {
	if s == "" {
		return "unnamed"
	}
	b := []byte(s)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), maxKeyName)])
}

// opNames is ops as a comma-separated list.
func opNames(ops []op) string {
	var s []string
	for _, o := range ops {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}

func roleList() string {
	var s []string
	for _, r := range Roles {
		s = append(s, string(r))
	}
	return strings.Join(s, ", ")
}

// Key is a signing key for one principal. The zero Key is not valid.
type Key struct {
	ID  KeyID
	key [32]byte
}

// DeriveKey derives id's key from the cluster secret. Errors wrap
// cairn.ErrInvalid (an empty secret, an invalid id).
func DeriveKey(secret string, id KeyID) (Key, error) {
	if secret == "" {
		return Key{}, fmt.Errorf("%w: empty cluster secret", cairn.ErrInvalid)
	}
	if err := id.Validate(); err != nil {
		return Key{}, err
	}
	return Key{ID: id, key: deriveKey(secret, id)}, nil
}

// deriveKey is DeriveKey of a valid id.
func deriveKey(secret string, id KeyID) [32]byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(keyInfoPrefix + id.String()))
	var k [32]byte
	m.Sum(k[:0])
	return k
}

// String is the key as a config carries it: role/name:<64 hex>. It is a
// credential: whoever has it may make the role's requests.
func (k Key) String() string { return k.ID.String() + ":" + hex.EncodeToString(k.key[:]) }

// ParseKey parses what Key.String made. Errors wrap cairn.ErrInvalid and
// never quote the key bytes.
func ParseKey(s string) (Key, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Key{}, fmt.Errorf("%w: node key: want ROLE/NAME:<64 hex digits>", cairn.ErrInvalid)
	}
	id, err := ParseKeyID(s[:i])
	if err != nil {
		return Key{}, fmt.Errorf("node key: %w", err)
	}
	k := Key{ID: id}
	h := s[i+1:]
	if len(h) != 2*len(k.key) || h != strings.ToLower(h) {
		return Key{}, fmt.Errorf("%w: node key %s: want 64 lower-case hex digits after the ':'", cairn.ErrInvalid, id)
	}
	if _, err := hex.Decode(k.key[:], []byte(h)); err != nil {
		return Key{}, fmt.Errorf("%w: node key %s: want 64 lower-case hex digits after the ':'", cairn.ErrInvalid, id)
	}
	return k, nil
}
