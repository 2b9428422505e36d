package s3

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"cairn"
)

// GetObjectAttributes (GET ?attributes): what x-amz-object-attributes
// names of ETag, Checksum, ObjectParts, StorageClass and ObjectSize, read
// from the manifest alone. ObjectParts pages a multipart object's parts
// with x-amz-max-parts (default and at most 1000) and
// x-amz-part-number-marker; an object uploaded in one piece has none.

type attributesResult struct {
	XMLName      xml.Name           `xml:"GetObjectAttributesResponse"`
	NS           string             `xml:"xmlns,attr"`
	ETag         string             `xml:"ETag,omitempty"`
	Checksum     *attributeChecksum `xml:"Checksum,omitempty"`
	ObjectParts  *attributeParts    `xml:"ObjectParts,omitempty"`
	StorageClass string             `xml:"StorageClass,omitempty"`
	ObjectSize   *int64             `xml:"ObjectSize,omitempty"`
}

type attributeChecksum struct {
	checksumXML
	ChecksumType string `xml:"ChecksumType,omitempty"`
}

type attributeParts struct {
	IsTruncated          bool            `xml:"IsTruncated"`
	MaxParts             int             `xml:"MaxParts"`
	NextPartNumberMarker int             `xml:"NextPartNumberMarker"`
	PartNumberMarker     int             `xml:"PartNumberMarker"`
	Parts                []attributePart `xml:"Part"`
	PartsCount           int             `xml:"PartsCount"`
}

type attributePart struct {
	checksumXML
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
}

// objectAttributes are the names x-amz-object-attributes may list.
var objectAttributes = []string{"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"}

// parseAttributes parses x-amz-object-attributes (one header, comma
// separated, or several): InvalidArgument for none or an unknown name.
func parseAttributes(hd http.Header) (map[string]bool, error) {
	want := map[string]bool{}
	for _, v := range hd.Values("X-Amz-Object-Attributes") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			ok := false
			for _, a := range objectAttributes {
				if strings.EqualFold(a, name) {
					want[a], ok = true, true
				}
			}
			if !ok {
				return nil, fmt.Errorf("%w: Invalid attribute name specified: %q", ErrInvalidArgument, name)
			}
		}
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("%w: x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty", ErrInvalidRequest)
	}
	return want, nil
}

// headerInt parses an integer header ≥ 0 (def if absent).
func headerInt(hd http.Header, name string, def int) (int, error) {
	v := hd.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s %q", ErrInvalidArgument, name, v)
	}
	return n, nil
}

func (h *Handler) objectAttributes(q *request) error {
	ctx := q.r.Context()
	if q.r.Method != http.MethodGet {
		return ErrMethodNotAllowed
	}
	if err := h.checkBucket(q, q.bucket); err != nil {
		return err
	}
	want, err := parseAttributes(q.r.Header)
	if err != nil {
		return err
	}
	maxParts, err := headerInt(q.r.Header, "X-Amz-Max-Parts", 1000)
	if err != nil {
		return err
	}
	marker, err := headerInt(q.r.Header, "X-Amz-Part-Number-Marker", 0)
	if err != nil {
		return err
	}
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return err
	}
	vid := q.r.URL.Query().Get("versionId")
	m, err := h.statVersion(ctx, q.w, q.bucket, q.key, vid) // of the version asked for, else the current one
	if err != nil {
		return err
	}
	if vid != "" {
		q.w.Header().Set("X-Amz-Version-Id", m.VersionID())
	}
	if err := checkObjectKey(m, ck); err != nil {
		return err
	}
	out := attributesResult{NS: s3NS}
	if want["ETag"] {
		out.ETag = m.ETag
	}
	if want["Checksum"] && m.Checksum != nil {
		out.Checksum = &attributeChecksum{checksumXML: xmlChecksum(m.Checksum), ChecksumType: m.Checksum.Type}
	}
	if want["StorageClass"] {
		out.StorageClass = h.storageClass(m.Policy)
	}
	if want["ObjectSize"] {
		size := m.ContentSize()
		out.ObjectSize = &size
	}
	if want["ObjectParts"] && len(m.Parts) > 0 {
		page, more := pageParts(m.Parts, marker, min(maxParts, 1000))
		op := &attributeParts{IsTruncated: more, MaxParts: min(maxParts, 1000), PartNumberMarker: marker, PartsCount: len(m.Parts), Parts: []attributePart{}}
		for _, p := range page {
			size := p.Size
			if m.Encryption != nil {
				if size, err = cairn.DecryptedSize(p.Size); err != nil {
					return fmt.Errorf("%w: stored part %d: %v", cairn.ErrCorrupt, p.Number, err)
				}
			}
			op.Parts = append(op.Parts, attributePart{checksumXML: xmlChecksum(p.Checksum), PartNumber: p.Number, Size: size})
			op.NextPartNumberMarker = p.Number
		}
		out.ObjectParts = op
	}
	setSSEHeaders(q.w, m.Encryption, ck)
	q.w.Header().Set("Last-Modified", lastModified(m).Format(http.TimeFormat))
	return h.writeXML(q, http.StatusOK, out)
}

// pageParts is the page of parts (sorted by number) after part number
// marker, at most max of them, and whether more follow.
func pageParts(parts []cairn.Part, marker, max int) (page []cairn.Part, more bool) {
	start := 0
	for start < len(parts) && parts[start].Number <= marker {
		start++
	}
	page = parts[start:]
	if len(page) > max {
		return page[:max], true
	}
	return page, false
}
