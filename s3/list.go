package s3

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"cairn"
)

// maxListKeys is the most entries (keys plus common prefixes) one listing
// page returns, as S3.
const maxListKeys = 1000

// skipBatch is the first listing batch with a delimiter, and the batch
// after one that ended skipping keys under a common prefix.
const skipBatch = 16

type listEntry struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        *owner `xml:"Owner,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// listBucketResult is the response of ListObjects (V1) and ListObjectsV2;
// the fields of the other version stay empty and are omitted.
type listBucketResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	NS                    string         `xml:"xmlns,attr"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Marker                *string        `xml:"Marker,omitempty"`
	NextMarker            string         `xml:"NextMarker,omitempty"`
	ContinuationToken     string         `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	StartAfter            string         `xml:"StartAfter,omitempty"`
	KeyCount              *int           `xml:"KeyCount,omitempty"`
	MaxKeys               int            `xml:"MaxKeys"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	EncodingType          string         `xml:"EncodingType,omitempty"`
	IsTruncated           bool           `xml:"IsTruncated"`
	Contents              []listEntry    `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

// listPage is one page of a listing: keys and common prefixes in order.
type listPage struct {
	objects   []cairn.ObjectInfo
	prefixes  []string
	truncated bool
	next      string // the last key or common prefix returned: where the next page starts
}

// list returns up to maxKeys keys and common prefixes of bucket under
// prefix, rolled up at delim, sorting after `after`. A marker that is
// itself a common prefix skips every key under it (the previous page
// returned that prefix). Keys are valid UTF-8, which never contains the
// byte 0xff, so cp+"\xff" sorts after every key under cp.
func list(ctx context.Context, m Meta, bucket, prefix, delim, after string, maxKeys int) (listPage, error) {
	var p listPage
	if delim != "" && strings.HasPrefix(after, prefix) {
		if i := strings.Index(after[len(prefix):], delim); i >= 0 && len(prefix)+i+len(delim) == len(after) {
			after += "\xff"
		}
	}
	if maxKeys == 0 {
		return p, nil
	}
	// With a delimiter, batches start small and grow while they yield
	// entries; a batch that ends inside a common prefix (skipping its keys)
	// drops back to skipBatch, so a page over big "directories" reads a
	// few manifests per directory rather than a batch each.
	batch := maxListKeys
	if delim != "" {
		batch = skipBatch
	}
	count, lastCP, skipping := 0, "", false
	for {
		ms, more, err := m.ListObjects(ctx, bucket, prefix, after, min(maxKeys-count+1, batch))
		if err != nil {
			return p, err
		}
		for _, o := range ms {
			skipping = false
			if delim != "" {
				if i := strings.Index(o.Key[len(prefix):], delim); i >= 0 {
					cp := o.Key[:len(prefix)+i+len(delim)]
					if cp == lastCP {
						skipping = true
						continue
					}
					if count == maxKeys {
						p.truncated = true
						return p, nil
					}
					p.prefixes = append(p.prefixes, cp)
					lastCP, p.next, after = cp, cp, cp+"\xff"
					skipping = true // its other keys likely follow
					count++
					continue
				}
			}
			if count == maxKeys {
				p.truncated = true
				return p, nil
			}
			p.objects = append(p.objects, o)
			p.next, after = o.Key, o.Key
			count++
		}
		if !more || len(ms) == 0 {
			return p, nil
		}
		if skipping {
			batch = skipBatch
		} else {
			batch = min(batch*4, maxListKeys)
		}
	}
}

func (h *Handler) listObjects(q *request, v2 bool) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	query := q.r.URL.Query()
	prefix, delim := query.Get("prefix"), query.Get("delimiter")
	maxKeys := maxListKeys
	if v := query.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: max-keys %q", ErrInvalidArgument, v)
		}
		maxKeys = min(n, maxListKeys)
	}
	enc := query.Get("encoding-type")
	if enc != "" && enc != "url" {
		return fmt.Errorf("%w: encoding-type %q", ErrInvalidArgument, enc)
	}
	encode := func(s string) string {
		if enc == "url" {
			return uriEncode(s, false)
		}
		return s
	}
	out := listBucketResult{NS: s3NS, Name: q.bucket, Prefix: encode(prefix), Delimiter: encode(delim), MaxKeys: maxKeys, EncodingType: enc}
	var after string
	if v2 {
		after = query.Get("start-after")
		out.StartAfter = encode(after)
		if tok := query.Get("continuation-token"); tok != "" {
			b, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil {
				return fmt.Errorf("%w: continuation-token", ErrInvalidArgument)
			}
			after, out.ContinuationToken = string(b), tok
		}
	} else {
		after = query.Get("marker")
		m := encode(after)
		out.Marker = &m
	}
	p, err := list(q.r.Context(), h.cfg.Meta, q.bucket, prefix, delim, after, maxKeys)
	if errors.Is(err, cairn.ErrNotFound) {
		return withCause(ErrNoSuchBucket, err)
	}
	if err != nil {
		return err
	}
	var own *owner
	if !v2 || query.Get("fetch-owner") == "true" {
		own = &owner{ID: q.auth.id.Name, DisplayName: q.auth.id.Name}
	}
	out.Contents = make([]listEntry, 0, len(p.objects))
	for _, m := range p.objects {
		out.Contents = append(out.Contents, listEntry{Key: encode(m.Key), LastModified: isoTime(m.Created), ETag: `"` + m.ETag + `"`, Size: m.Size, StorageClass: h.storageClass(m.Policy), Owner: own})
	}
	for _, cp := range p.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, commonPrefix{Prefix: encode(cp)})
	}
	out.IsTruncated = p.truncated
	if v2 {
		n := len(p.objects) + len(p.prefixes)
		out.KeyCount = &n
		if p.truncated {
			out.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(p.next))
		}
	} else if p.truncated {
		out.NextMarker = encode(p.next)
	}
	return h.writeXML(q, http.StatusOK, out)
}
