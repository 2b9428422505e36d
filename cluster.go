package cairn

import (
	"fmt"
	"strings"
	"time"
)

// NodeID names a storage node, e.g. "node1". Node IDs are chosen by the
// operator (or by `cairn server`) and never reused for another machine.
type NodeID string

// DiskID names a disk cluster-wide, e.g. "node1/disk3". A disk keeps its ID
// for its whole life, also across replacements of the device behind it: a
// wiped or replaced disk comes back under the same ID with a new volume ID
// (Disk.Volume), and the cluster map decides what it may hold
// (docs/design/disks.md).
type DiskID string

// DiskState is where a disk is in its life cycle (docs/design/disks.md has
// the state diagram and each transition's trigger).
type DiskState string

// Disk states. Only up disks receive new shards; up, draining and suspect
// disks are read; the shards on down and out disks are lost and rebuilt
// elsewhere.
const (
	DiskUp       DiskState = "up"       // serving reads and writes
	DiskSuspect  DiskState = "suspect"  // missed its lease or reports a fault; read, not written
	DiskDown     DiskState = "down"     // suspect for longer than the grace period, or replaced; neither read nor written; its shards are rebuilt elsewhere
	DiskDraining DiskState = "draining" // being emptied by the operator: read, not written; its shards are moved off
	DiskOut      DiskState = "out"      // taken out for good (by the operator, or drained); its shards are rebuilt elsewhere
)

// Valid reports whether s is one of the defined states.
func (s DiskState) Valid() bool {
	switch s {
	case DiskUp, DiskSuspect, DiskDown, DiskDraining, DiskOut:
		return true
	}
	return false
}

// UnmarshalText reads a state as stored; "failed", the name records
// written before the out state had, reads as DiskOut.
func (s *DiskState) UnmarshalText(b []byte) error {
	*s = DiskState(b)
	if *s == "failed" {
		*s = DiskOut
	}
	return nil
}

// Writable reports whether new shards may be placed on a disk in state s.
func (s DiskState) Writable() bool { return s == DiskUp }

// Writable reports whether new shards may be written to d: its state is
// up and its node reports no fault. A fault (the directory vanished, a
// write failed) keeps writes off the disk from the node's next
// registration on, before the director has turned the disk suspect.
func (d Disk) Writable() bool { return d.State.Writable() && d.Fault == "" }

// Readable reports whether shards may be read from a disk in state s.
func (s DiskState) Readable() bool { return s == DiskUp || s == DiskDraining || s == DiskSuspect }

// Lost reports whether the shards on a disk in state s are gone as far as
// the cluster is concerned: neither read nor used to rebuild others, and
// rebuilt elsewhere.
func (s DiskState) Lost() bool { return s == DiskDown || s == DiskOut }

// CheckOK is the Disk.Check of a volume whose check passed.
const CheckOK = "ok"

// Labels are failure-domain labels of a node or disk. Well-known keys are
// LabelRack and LabelZone; placement treats the node as the smallest
// failure domain.
type Labels map[string]string

// Well-known label keys.
const (
	LabelRack = "rack"
	LabelZone = "zone"
)

// Node is a storage node as registered in the cluster map.
type Node struct {
	ID     NodeID `json:"id"`
	Addr   string `json:"addr"` // host:port of the node protocol (HTTP)
	Labels Labels `json:"labels,omitempty"`
}

// Disk is one disk (a directory) served by a node, as the cluster map
// records it. Two writers share the record: the node (PutDisk) owns Path,
// Capacity, Free, Fault, Volume and Check and rewrites them on every
// registration (RAIDPSize, RAIDPSlots and RAIDPFault too); the director
// and the operator (ChangeDisk) own State,
// Since, Reason and Trusted, which a registration keeps.
type Disk struct {
	ID       DiskID    `json:"id"`
	Node     NodeID    `json:"node"`
	Path     string    `json:"path"` // directory on the node, for operators
	Capacity int64     `json:"capacity"`
	Free     int64     `json:"free"`
	State    DiskState `json:"state"`
	Since    time.Time `json:"since"`            // when State last changed
	Reason   string    `json:"reason,omitempty"` // why it is in State (the transition's reason)
	// Fault is the node's report of an I/O problem with the disk (its
	// directory vanished, a write or fsync failed); empty when healthy.
	// The node sets it when it registers the disk; the director turns a
	// faulty disk suspect, then down.
	Fault string `json:"fault,omitempty"`
	// FS identifies the file system holding the disk's directory on its
	// node (vfs.DiskUsage.FS): disks of one node with the same FS share
	// Capacity and Free. "" when unknown.
	FS string `json:"fs,omitempty"`
	// Volume is the volume ID of the directory the node has open for this
	// disk: a random ID written when the directory was formatted, so a
	// wiped and re-formatted directory has a new one. Empty from nodes
	// that do not report it.
	Volume string `json:"volume,omitempty"`
	// Check is the node's check of the open volume (its identity and every
	// shard's footer): "" while it has not run since the volume was opened
	// or last reported a fault, CheckOK when it passed, else what failed.
	Check string `json:"check,omitempty"`
	// Trusted is the volume ID whose shards the manifests mean when they
	// place a shard on this disk: the first volume registered, kept while
	// the node reports it, and replaced only when a new volume enters
	// service empty (docs/design/disks.md). Empty for disks registered
	// before volume IDs existed, until the director adopts one.
	Trusted string `json:"trusted_volume,omitempty"`
	// MoveRate bounds, in bytes per second, how fast the shards of a
	// draining disk are moved off (cairn admin node drain --rate); 0 is
	// the director's default. The operator sets it with the drain; any
	// change out of draining clears it (DiskChange.Apply).
	MoveRate int64 `json:"move_rate,omitempty"`
	// RAIDPSize and RAIDPSlots are the RAIDP geometry of a disk the node
	// serves with an Lstor (superchunk size and slots; 0: no Lstor), as
	// the node registers it (docs/design/raidp.md, "In the cluster").
	RAIDPSize  int64 `json:"raidp_size,omitempty"`
	RAIDPSlots int   `json:"raidp_slots,omitempty"`
	// RAIDPFault is the node's report that the disk's Lstor is marked for
	// verification (a journal record failed its CRC, a write failed
	// half-way, or the disk or its Lstor is new beside the other): the node
	// refuses RAIDP writes to it until `cairn admin raidp verify --resync`
	// recomputes the parity. Empty when the Lstor is usable (or absent).
	RAIDPFault string `json:"raidp_fault,omitempty"`
}

// Replaced reports whether the node reports a volume other than the one
// the cluster trusts: the directory was wiped and formatted again, so the
// shards manifests place on the disk are not on it.
func (d Disk) Replaced() bool { return d.Volume != "" && d.Trusted != "" && d.Volume != d.Trusted }

// DiskChange is a change of a disk's life-cycle fields (meta.Store's
// ChangeDisk): a compare-and-swap on the state (and the reported volume).
type DiskChange struct {
	From   DiskState // the state the record must be in ("": any)
	To     DiskState // the new state (may equal From: only the reason or trust changes)
	Since  time.Time // the new Since; zero keeps the stored one
	Reason string    // the new Reason
	// Trust, if not empty, becomes the record's Trusted volume.
	Trust string
	// IfVolume, if not empty, is the volume the change was decided on: it
	// applies only while the node still reports it (Disk.Volume).
	IfVolume string
	// MoveRate, for a change to draining, becomes the record's MoveRate
	// when not 0 (a change within draining keeps the stored one); a
	// change to any other state clears it.
	MoveRate int64
}

// Apply returns d changed by c. ErrInvalid if c.To is not a valid state,
// ErrConflict if d is not in state c.From or does not report volume
// c.IfVolume.
func (c DiskChange) Apply(d Disk) (Disk, error) {
	if !c.To.Valid() {
		return d, fmt.Errorf("%w: disk state %q", ErrInvalid, c.To)
	}
	if c.MoveRate < 0 {
		return d, fmt.Errorf("%w: negative move rate %d B/s", ErrInvalid, c.MoveRate)
	}
	if c.From != "" && d.State != c.From {
		return d, fmt.Errorf("%w: disk %s is %s, not %s", ErrConflict, d.ID, d.State, c.From)
	}
	if c.IfVolume != "" && d.Volume != c.IfVolume {
		return d, fmt.Errorf("%w: disk %s reports volume %s now, not %s", ErrConflict, d.ID, d.Volume, c.IfVolume)
	}
	d.State, d.Reason = c.To, c.Reason
	if !c.Since.IsZero() {
		d.Since = c.Since
	}
	if c.Trust != "" {
		d.Trusted = c.Trust
	}
	switch {
	case c.To != DiskDraining:
		d.MoveRate = 0
	case c.MoveRate != 0:
		d.MoveRate = c.MoveRate
	}
	return d, nil
}

// Registered returns the record a registration r makes of the stored
// record old (nil: none): r's node-owned fields with old's life-cycle
// fields when old has a state. A first registration is trusted with the
// volume it reports.
func Registered(old *Disk, r Disk) Disk {
	if old != nil && old.State != "" {
		r.State, r.Since, r.Reason, r.Trusted, r.MoveRate = old.State, old.Since, old.Reason, old.Trusted, old.MoveRate
		return r
	}
	if r.Trusted == "" {
		r.Trusted = r.Volume
	}
	return r
}

// PG is a placement group: an ordered list of disks, one per shard index of
// a stripe, on distinct failure domains where the cluster allows. Objects
// map to a PG by hash; shard i of every stripe of an object lives on
// Disks[i] (unless the manifest records that it landed elsewhere).
type PG struct {
	ID    int      `json:"id"`
	Disks []DiskID `json:"disks"`
}

// PGTable is the set of placement groups of one width (the stripe width n of
// the policies that use it).
type PGTable struct {
	Width int  `json:"width"`
	PGs   []PG `json:"pgs"`
	// DistinctNodes is true when every PG's disks are on distinct nodes, so
	// the data survives the loss of a node (up to the code's tolerance).
	DistinctNodes bool `json:"distinct_nodes"`
	// Epoch counts the table's recomputations (placement.Recompute) as
	// nodes and disks joined or left: 0 as first computed, +1 each time
	// it changed. meta.Store.UpdatePGTable swaps tables by it.
	Epoch int `json:"epoch,omitempty"`
}

// Bucket is a namespace of objects with a default policy.
type Bucket struct {
	Name    string    `json:"name"`
	Policy  string    `json:"policy"` // default policy string for new objects, e.g. "rs-4-2"
	Owner   string    `json:"owner,omitempty"`
	Created time.Time `json:"created"`
	// Encryption is the bucket's default encryption: SSES3 encrypts every
	// new object that asks for none (S3's bucket default encryption); ""
	// stores them in the clear.
	Encryption string `json:"encryption,omitempty"`
	// Versioning is the bucket's versioning status: "" (never
	// versioned), VersioningEnabled or VersioningSuspended
	// (docs/design/versioning.md).
	Versioning string `json:"versioning,omitempty"`
	// ObjectLock, once set, says Object Lock is enabled on the bucket
	// (docs/design/objectlock.md), with its default retention; its
	// versioning is then Enabled for good.
	ObjectLock *ObjectLock `json:"object_lock,omitempty"`
	// Tags are the bucket's tags (S3 bucket tagging; at most 50).
	Tags map[string]string `json:"tags,omitempty"`
	// CORS is the bucket's CORS configuration (PutBucketCors): the rules
	// a browser's cross-origin request is checked against, in order.
	CORS []CORSRule `json:"cors,omitempty"`
	// Lifecycle is the bucket's lifecycle configuration
	// (PutBucketLifecycleConfiguration; nil: none). A stored value is
	// replaced, never changed in place.
	Lifecycle []LifecycleRule `json:"lifecycle,omitempty"`
	// Access is the bucket's policy, ACL and Block Public Access
	// settings (nil: private; docs/design/s3.md, "Access control"). A
	// stored value is replaced, never changed in place.
	Access *BucketAccess `json:"access,omitempty"`
}

// CORSRule is one rule of a bucket's CORS configuration, as S3's
// CORSRule: a cross-origin request matches it if its origin, method and
// every requested header match one of the rule's patterns (each may hold
// one "*" wildcard; see docs/design/s3.md, "CORS").
type CORSRule struct {
	ID             string   `json:"id,omitempty"`
	AllowedOrigins []string `json:"allowed_origins"`
	AllowedMethods []string `json:"allowed_methods"`
	AllowedHeaders []string `json:"allowed_headers,omitempty"`
	ExposeHeaders  []string `json:"expose_headers,omitempty"`
	MaxAgeSeconds  int      `json:"max_age_seconds,omitempty"` // 0: no Access-Control-Max-Age
}

// MaxKeyLen is the longest object key accepted, in bytes (as S3).
const MaxKeyLen = 1024

// Prefixes and suffixes S3 reserves: no bucket name may start or end
// with one (punycode names; access point, Object Lambda, Multi-Region
// Access Point, directory and table bucket aliases; S3's own names).
var (
	reservedBucketPrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedBucketSuffixes = []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}
)

// ValidateBucketName checks the S3 bucket naming rules: 3–63 characters of
// lower-case letters, digits, dots and hyphens, starting and ending with a
// letter or digit, no "..", not shaped like an IP address, and none of
// the prefixes and suffixes S3 reserves ("xn--", "-s3alias", "--ol-s3", ...).
func ValidateBucketName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: bucket name %q: %s", ErrInvalid, name, why)
	}
	if len(name) < 3 || len(name) > 63 {
		return bad("must be 3 to 63 characters long")
	}
	dots := 0
	digitsAndDots := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z':
			digitsAndDots = false
		case c >= '0' && c <= '9':
		case c == '.':
			dots++
			if i > 0 && name[i-1] == '.' {
				return bad("must not contain \"..\"")
			}
		case c == '-':
			digitsAndDots = false
		default:
			return bad("may contain only lower-case letters, digits, '.' and '-'")
		}
	}
	if first, last := name[0], name[len(name)-1]; first == '.' || first == '-' || last == '.' || last == '-' {
		return bad("must start and end with a letter or digit")
	}
	if digitsAndDots && dots == 3 {
		return bad("must not look like an IP address")
	}
	for _, p := range reservedBucketPrefixes {
		if strings.HasPrefix(name, p) {
			return bad(fmt.Sprintf("must not start with %q (reserved by S3)", p))
		}
	}
	for _, sfx := range reservedBucketSuffixes {
		if strings.HasSuffix(name, sfx) {
			return bad(fmt.Sprintf("must not end with %q (reserved by S3)", sfx))
		}
	}
	return nil
}

// ValidateKey checks an object key: 1 to MaxKeyLen bytes of valid UTF-8.
// Keys are otherwise opaque: they never become file names.
func ValidateKey(key string) error {
	if why := keyProblem(key); why != "" {
		return fmt.Errorf("%w: %s", ErrInvalid, why)
	}
	return nil
}

// keyProblem returns why ValidateKey refuses key ("" if it does not).
func keyProblem(key string) string {
	switch {
	case key == "":
		return "object key is empty"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("object key is %d bytes, longer than %d", len(key), MaxKeyLen)
	case !validUTF8(key):
		return "object key is not valid UTF-8"
	}
	return ""
}
