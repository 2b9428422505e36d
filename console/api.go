package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
)

// pageSize is how many keys (and prefixes) one object listing returns.
const pageSize = 200

// maxBuckets bounds the buckets the buckets view lists.
const maxBuckets = 1000

// bucketInfo is one bucket of GET /api/buckets.
type bucketInfo struct {
	Name    string       `json:"name"`
	Created time.Time    `json:"created"`
	Policy  string       `json:"policy,omitempty"`
	Owner   string       `json:"owner,omitempty"`
	Usage   *cairn.Tally `json:"usage,omitempty"`
}

// bucketsResponse is GET /api/buckets's answer.
type bucketsResponse struct {
	Buckets   []bucketInfo `json:"buckets"`
	Truncated bool         `json:"truncated,omitempty"` // more than maxBuckets
}

// listAllMyBuckets is the S3 ListBuckets answer.
type listAllMyBuckets struct {
	Buckets []struct {
		Name         string
		CreationDate time.Time
	} `xml:"Buckets>Bucket"`
}

// buckets lists the session user's buckets (as ListBuckets shows them to
// it) with their policies and usage.
func (c *Console) buckets(w http.ResponseWriter, r *http.Request, s *session) {
	var l listAllMyBuckets
	if !c.callXML(w, r, s, "", nil, &l) {
		return
	}
	out := bucketsResponse{Buckets: []bucketInfo{}}
	for _, b := range l.Buckets {
		if len(out.Buckets) == maxBuckets {
			out.Truncated = true
			break
		}
		out.Buckets = append(out.Buckets, bucketInfo{Name: b.Name, Created: b.CreationDate})
	}
	if m := c.cfg.Meta; m != nil {
		g, ctx := errgroup.WithContext(r.Context())
		g.SetLimit(8)
		for i := range out.Buckets {
			bi := &out.Buckets[i]
			g.Go(func() error {
				if b, err := m.Bucket(ctx, bi.Name); err == nil {
					bi.Policy, bi.Owner = b.Policy, b.Owner
				}
				if u, err := m.BucketUsage(ctx, bi.Name); err == nil {
					bi.Usage = &u
				}
				return nil // a bucket removed meanwhile shows without them
			})
		}
		g.Wait()
	}
	writeJSON(w, http.StatusOK, out)
}

// createBucketRequest is the body of POST /api/buckets.
type createBucketRequest struct {
	Name   string `json:"name"`
	Policy string `json:"policy,omitempty"` // "": the gateway's default
}

// createBucket makes a bucket as the session's user, with a policy if
// one is given (the gateway checks it against the user's allow-list).
func (c *Console) createBucket(w http.ResponseWriter, r *http.Request, s *session) {
	var req createBucketRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || req.Name == "" || strings.Contains(req.Name, "/") {
		writeError(w, http.StatusBadRequest, "BadRequest", "want a JSON body {\"name\":..., \"policy\":...} with a bucket name")
		return
	}
	hdr := http.Header{}
	if req.Policy != "" {
		hdr.Set("X-Cairn-Policy", req.Policy)
	}
	if res := c.call(r, s, http.MethodPut, req.Name, "", nil, hdr); res.status != http.StatusOK {
		res.writeError(w)
		return
	}
	writeJSON(w, http.StatusCreated, createBucketRequest{Name: req.Name, Policy: req.Policy})
}

// listBucketV2 is the S3 ListObjectsV2 answer.
type listBucketV2 struct {
	IsTruncated           bool
	NextContinuationToken string
	Contents              []struct {
		Key          string
		Size         int64
		LastModified time.Time
		ETag         string
	}
	CommonPrefixes []struct{ Prefix string }
}

// objectInfo is one object of GET /api/objects.
type objectInfo struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	ETag     string    `json:"etag"`
}

// objectsResponse is GET /api/objects's answer: one page of a bucket's
// listing under prefix, "/" delimited.
type objectsResponse struct {
	Bucket   string       `json:"bucket"`
	Prefix   string       `json:"prefix"`
	Prefixes []string     `json:"prefixes"`
	Objects  []objectInfo `json:"objects"`
	Next     string       `json:"next,omitempty"` // the token of the next page
}

// objects lists a page of bucket's objects and prefixes under prefix
// (query: bucket, prefix, token).
func (c *Console) objects(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	bucket := q.Get("bucket")
	if !validBucket(w, bucket) {
		return
	}
	sq := url.Values{"list-type": {"2"}, "delimiter": {"/"}, "max-keys": {strconv.Itoa(pageSize)}}
	if p := q.Get("prefix"); p != "" {
		sq.Set("prefix", p)
	}
	if t := q.Get("token"); t != "" {
		sq.Set("continuation-token", t)
	}
	var l listBucketV2
	if !c.callXML(w, r, s, bucket, sq, &l) {
		return
	}
	out := objectsResponse{Bucket: bucket, Prefix: q.Get("prefix"), Prefixes: []string{}, Objects: []objectInfo{}}
	for _, p := range l.CommonPrefixes {
		out.Prefixes = append(out.Prefixes, p.Prefix)
	}
	for _, o := range l.Contents {
		out.Objects = append(out.Objects, objectInfo{Key: o.Key, Size: o.Size, Modified: o.LastModified, ETag: strings.Trim(o.ETag, `"`)})
	}
	if l.IsTruncated {
		out.Next = l.NextContinuationToken
	}
	writeJSON(w, http.StatusOK, out)
}

// objectArgs reads and checks the bucket and key of an object call.
func objectArgs(w http.ResponseWriter, r *http.Request) (bucket, key string, ok bool) {
	q := r.URL.Query()
	bucket, key = q.Get("bucket"), q.Get("key")
	if !validBucket(w, bucket) {
		return "", "", false
	}
	if key == "" {
		writeError(w, http.StatusBadRequest, "BadRequest", "name the object: ?bucket=...&key=...")
		return "", "", false
	}
	return bucket, key, true
}

func validBucket(w http.ResponseWriter, bucket string) bool {
	if bucket == "" || strings.Contains(bucket, "/") {
		writeError(w, http.StatusBadRequest, "BadRequest", "name a bucket: ?bucket=...")
		return false
	}
	return true
}

// upload stores the request body as bucket/key (a PutObject as the
// session's user). The body's length must be known (Content-Length).
func (c *Console) upload(w http.ResponseWriter, r *http.Request, s *session) {
	bucket, key, ok := objectArgs(w, r)
	if !ok {
		return
	}
	if r.ContentLength < 0 {
		writeError(w, http.StatusLengthRequired, "MissingContentLength", "an upload needs a Content-Length")
		return
	}
	hdr := http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		hdr.Set("Content-Type", ct)
	}
	res := c.callBody(w, r, s, http.MethodPut, bucket, key, nil, hdr, r.Body, r.ContentLength)
	if res.status != http.StatusOK {
		res.writeError(w)
		return
	}
	writeJSON(w, http.StatusOK, objectInfo{Key: key, Size: r.ContentLength, ETag: strings.Trim(res.header.Get("ETag"), `"`)})
}

// download streams bucket/key to the browser as an attachment (a
// GetObject as the session's user).
func (c *Console) download(w http.ResponseWriter, r *http.Request, s *session) {
	bucket, key, ok := objectArgs(w, r)
	if !ok {
		return
	}
	d := &relay{capture: capture{under: w, header: http.Header{}}, filename: path.Base(key)}
	c.cfg.S3.ServeHTTP(d, c.s3Request(r, s, http.MethodGet, bucket, key, nil, nil, nil, 0))
	if d.status == 0 {
		d.WriteHeader(http.StatusOK) // an empty object
	}
	if !d.passing {
		result{status: d.status, header: d.header, body: d.buf.Bytes()}.writeError(w)
	}
}

// deleteObject deletes bucket/key (a DeleteObject as the session's user).
func (c *Console) deleteObject(w http.ResponseWriter, r *http.Request, s *session) {
	bucket, key, ok := objectArgs(w, r)
	if !ok {
		return
	}
	if res := c.call(r, s, http.MethodDelete, bucket, key, nil, nil); res.status != http.StatusNoContent && res.status != http.StatusOK {
		res.writeError(w)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// manifest answers bucket/key's manifest — what `cairn stat --json`
// prints — once the gateway has authorized a HEAD of the object as the
// session's user.
func (c *Console) manifest(w http.ResponseWriter, r *http.Request, s *session) {
	bucket, key, ok := objectArgs(w, r)
	if !ok {
		return
	}
	if res := c.call(r, s, http.MethodHead, bucket, key, nil, nil); res.status != http.StatusOK {
		if res.status == http.StatusNotFound {
			writeError(w, http.StatusNotFound, "NoSuchKey", "no such object")
			return
		}
		res.writeError(w) // a HEAD's error has no body: the status says it
		return
	}
	m, err := c.cfg.Objects.Stat(r.Context(), bucket, key)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		writeError(w, http.StatusNotFound, "NoSuchKey", "no such object")
		return
	case err != nil:
		c.cfg.Logger.Error("console manifest", "bucket", bucket, "key", key, "err", err)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the manifest could not be read")
		return
	}
	writeJSON(w, http.StatusOK, m)
}

// cluster answers the cluster's status, read at most once per
// StatusEvery for every session.
func (c *Console) cluster(w http.ResponseWriter, r *http.Request, _ *session) {
	if c.cfg.Cluster == nil {
		writeError(w, http.StatusNotFound, "NotFound", "this console has no cluster view")
		return
	}
	c.statusMu.Lock()
	now := c.cfg.Now()
	if c.status == nil && c.statusE == nil || now.Sub(c.statusAt) >= c.cfg.StatusEvery {
		st, err := c.cfg.Cluster.Status(r.Context())
		c.status, c.statusE, c.statusAt = nil, err, now
		if err == nil {
			c.status, c.statusE = json.Marshal(st)
		}
	}
	b, err := c.status, c.statusE
	c.statusMu.Unlock()
	if err != nil {
		c.cfg.Logger.Error("console cluster status", "err", err)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the cluster status could not be read")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// throughputResponse is GET /api/throughput's answer: the counters since
// the process started, and when they were read (Unix milliseconds).
type throughputResponse struct {
	Time int64 `json:"time_ms"`
	CounterValues
	Engine *EngineStatus `json:"engine,omitempty"`
}

// EngineStatus is the speculative engine's decisions so far in this
// process (client.Stats, counters since it started) and its current
// verdicts on slow disks.
type EngineStatus struct {
	ReadsHedged     int64 `json:"reads_hedged"`     // GET shard requests started because others were slow
	ReadsCancelled  int64 `json:"reads_cancelled"`  // stragglers and losers a GET cancelled
	ReadsReplaced   int64 `json:"reads_replaced"`   // GET shard requests started because one failed
	WritesCancelled int64 `json:"writes_cancelled"` // PUT streams cancelled (replaced by a spare row)
	WritesReplaced  int64 `json:"writes_replaced"`  // PUT streams started because one failed
	SpareRows       int64 `json:"spare_rows"`       // PUT streams started on a spare parity row
	Decodes         int64 `json:"decodes"`          // GET windows decoded around missing data shards
	SlowMarks       int64 `json:"slow_marks"`       // times a disk was marked slow
	// SlowDisks are the disks held slow or on probation now.
	SlowDisks []SlowDisk `json:"slow_disks"`
}

// SlowDisk is one disk the data path judges slower than its peers.
type SlowDisk struct {
	Disk  string  `json:"disk"`
	State string  `json:"state"` // "slow" (avoided) or "probation" (used, watched)
	Score float64 `json:"score"` // its time ÷ its peers', weighted towards the recent
	Since int64   `json:"since_ms"`
	Until int64   `json:"until_ms,omitempty"` // when a slow disk's hold ends
}

func (c *Console) throughput(w http.ResponseWriter, _ *http.Request, _ *session) {
	if c.cfg.Counters == nil {
		writeError(w, http.StatusNotFound, "NotFound", "this console counts no throughput")
		return
	}
	resp := throughputResponse{Time: c.cfg.Now().UnixMilli(), CounterValues: c.cfg.Counters.Values()}
	if c.cfg.Engine != nil {
		e := c.cfg.Engine()
		resp.Engine = &e
	}
	writeJSON(w, http.StatusOK, resp)
}
