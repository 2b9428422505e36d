package etcdmeta

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"cairn"
	"cairn/meta"
)

// DefaultPrefix is where a Store keeps its keys unless Options.Prefix says
// otherwise.
const DefaultPrefix = "/cairn/"

// layoutVersion is stored at <prefix>layout; Open upgrades "1" (a store
// without usage counters), "2" (without listing records) and "3" (uploads
// without index records, upkeys.go) and refuses other values.
const layoutVersion = "4"

// keys builds the etcd keys of one store. The layout (docs/design/meta.md):
//
//	<p>layout                      "4"
//	<p>nodes/<node id>             cairn.Node (JSON)
//	<p>disks/<disk id>             cairn.Disk (JSON)
//	<p>pgs/<width>                 cairn.PGTable (JSON), width in decimal
//	<p>buckets/<bucket>            cairn.Bucket (JSON)
//	<p>objects/<bucket>/<key>      manifestRecord (JSON); key raw bytes; a
//	                               multipart object's without its parts
//	                               (headRecord, mparts.go)
//	<p>mparts/<bucket>/<v>/<n>     cairn.Part (JSON): part n of the multipart
//	                               object version v (mparts.go)
//	<p>list/<bucket>/<key>         listRecord (JSON): the object's listing
//	                               record, written with its manifest
//	<p>uploads/<bucket>/<id>       cairn.Upload (JSON); id is hex
//	<p>upkeys/<bucket>/<k>\x00\x00<t><id>
//	                               meta.UploadSummary (JSON): the upload's
//	                               index record by key k (NUL escaped) and
//	                               creation time t (upkeys.go)
//	<p>parts/<bucket>/<id>/<n>     cairn.Part (JSON); n is the part number
//	                               in 5 decimal digits (key order = number order)
//	<p>repairs/<task id>           cairn.RepairTask (JSON)
//	<p>users/<name>                cairn.User (JSON; users.go)
//	<p>userkeys/<access key>       the user name holding the key (users.go)
//	<p>users-stamp                 "": put with every user change (UsersStamp)
//	<p>users-defaults              cairn.UserDefaults (JSON)
//	<p>raidp/<name>                a RAIDP record (opaque JSON; raidp.go):
//	                               groups/<group>, alloc/<group>
//	<p>repair-progress             cairn.RepairProgress (JSON)
//	<p>damage/<disk id>/<shard>    cairn.Damage (JSON) (scrub.go)
//	<p>scrub/disks/<disk id>       cairn.ScrubProgress (JSON)
//	<p>scrub/control               cairn.ScrubControl (JSON)
//	<p>alive/<holder>              holder, attached to the holder's lease
//	<p>election/<role>/<lease id>  leader candidates (concurrency.Election);
//	                               role path-escaped
//	<p>usage/buckets/<bucket>/<s>  cairn.Tally (JSON): shard s (2 hex digits) of
//	                               a bucket's counter (usage.go)
//	<p>usage/codes/<code>/<s>      cairn.Tally (JSON): of a code's counter
//	<p>usage/disks/<disk id>/<s>   cairn.DiskTally (JSON): of a disk's counter
//	<p>usage/base                  cairn.Usage (JSON): the counts of a store
//	                               upgraded from layout 1
//	<p>secret-check                the cluster's secret check value (an HMAC
//	                               of a fixed string under the cluster secret,
//	                               never the secret; secretcheck.go)
//
// Object keys are stored raw: bucket names cannot contain "/" (they pass
// cairn.ValidateBucketName before a bucket key is ever written, and no
// object key is written without its bucket key), so <p>objects/<bucket>/
// is a prefix of exactly that bucket's objects, and byte order of the etcd
// keys under it is byte order of the object keys.
type keys struct{ p string }

func (k keys) layout() string                   { return k.p + "layout" }
func (k keys) nodes() string                    { return k.p + "nodes/" }
func (k keys) node(id cairn.NodeID) string      { return k.nodes() + string(id) }
func (k keys) disks() string                    { return k.p + "disks/" }
func (k keys) disk(id cairn.DiskID) string      { return k.disks() + string(id) }
func (k keys) pgs(width int) string             { return k.p + "pgs/" + strconv.Itoa(width) }
func (k keys) buckets() string                  { return k.p + "buckets/" }
func (k keys) bucket(name string) string        { return k.buckets() + name }
func (k keys) objects(bucket string) string     { return k.p + "objects/" + bucket + "/" }
func (k keys) object(bucket, key string) string { return k.objects(bucket) + key }
func (k keys) uploads(bucket string) string     { return k.p + "uploads/" + bucket + "/" }
func (k keys) upload(bucket, id string) string  { return k.uploads(bucket) + id }
func (k keys) parts(bucket, id string) string   { return k.p + "parts/" + bucket + "/" + id + "/" }
func (k keys) part(bucket, id string, n int) string {
	return fmt.Sprintf("%s%05d", k.parts(bucket, id), n)
}
func (k keys) repairs() string         { return k.p + "repairs/" }
func (k keys) repair(id string) string { return k.repairs() + id }
func (k keys) repairProgress() string  { return k.p + "repair-progress" }
func (k keys) alive() string           { return k.p + "alive/" }
func (k keys) secretCheck() string     { return k.p + "secret-check" }
func (k keys) holder(h string) string  { return k.alive() + h }

// election is the concurrency.Election prefix of a role (the election adds
// "/" and the candidate's lease ID). Escaping keeps role "a" from seeing
// role "a/b"'s candidates.
func (k keys) election(role string) string {
	return k.p + "election/" + url.PathEscape(role)
}

// normalizePrefix makes p end in "/" (DefaultPrefix if empty).
func normalizePrefix(p string) string {
	if p == "" {
		return DefaultPrefix
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// manifestRecord is the value stored under an object key:
//
//	{"version":"<m.Version>","manifest":{...cairn.Manifest...}}
//
// Version comes first so that "the stored version is v" is a comparison
// etcd could evaluate inside a Txn: the value starts with head(v) =
// `{"version":"<v>",` exactly when the stored version is v, and a value
// starts with head(v) iff head(v) < value < head(v) with its last byte
// (',') raised by one ('-'). JSON string encoding is deterministic and a
// string's closing quote is unambiguous, so no other version's record
// falls in that interval (TestVersionCompare). Writes now compare the
// record's mod revision with the one they read (counted, usage.go), and
// storedVersion reads the version without decoding the manifest.
type manifestRecord struct {
	Version  string          `json:"version"`
	Manifest *cairn.Manifest `json:"manifest"`
}

// recordHead returns `{"version":<json string v>,`.
func recordHead(v string) string {
	b, _ := json.Marshal(v) // a string always marshals
	return `{"version":` + string(b) + `,`
}

// encodeManifest returns m's record, built from recordHead.
func encodeManifest(m *cairn.Manifest) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encoding manifest of %s/%s: %w", m.Bucket, m.Key, err)
	}
	v := recordHead(m.Version) + `"manifest":` + string(b) + `}`
	if err := meta.CheckManifestBytes(m, len(v)); err != nil {
		return "", err
	}
	return v, nil
}

// storedVersion returns the version of a stored record without decoding
// the manifest (for error messages).
func storedVersion(v []byte) string {
	var r struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(v, &r) != nil {
		return "?"
	}
	return r.Version
}
