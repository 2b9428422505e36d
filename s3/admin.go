package s3

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The gateway's admin path (docs/design/s3.md, "Users and keys"):
// `POST /?cairn-admin=OP&...` with an empty body, signed with SigV4 like
// any S3 request (the query, hence every argument, is signed), by a root
// identity. The gateway hands it to Config.Admin.

// AdminQuery is the query parameter that makes a request to "/" an admin
// request; its value names the operation.
const AdminQuery = "cairn-admin"

// errAdminNotRoot: an admin request signed by an identity that is not root.
var errAdminNotRoot = &Error{"AccessDenied", http.StatusForbidden, "Only a root identity may use the admin path."}

// admin serves an admin request: POST, root, empty body, Config.Admin set.
func (h *Handler) admin(q *request) error {
	switch {
	case q.r.Method != http.MethodPost:
		return ErrMethodNotAllowed
	case !q.auth.id.Root:
		return errAdminNotRoot
	case h.cfg.Admin == nil:
		return fmt.Errorf("%w: this gateway has no admin path", ErrNotImplemented)
	case q.r.ContentLength != 0 || q.auth.payload != emptySHA256:
		return fmt.Errorf("%w: an admin request has an empty, signed body (its arguments are in the query)", ErrInvalidRequest)
	}
	h.cfg.Admin.ServeHTTP(q.w, q.r)
	return nil
}

// SignV4 signs r (whose body must be empty) with Signature V4 as
// accessKey/secretKey in region at time now: it sets Host, X-Amz-Date,
// X-Amz-Content-Sha256 and Authorization, signing host, the two x-amz
// headers, the path and the query. For the admin path's clients.
func SignV4(r *http.Request, accessKey, secretKey, region string, now time.Time) {
	if r.Host == "" {
		r.Host = r.URL.Host
	}
	now = now.UTC()
	amzDate := now.Format(amzDateFormat)
	r.Header.Set("X-Amz-Date", amzDate)
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	sh := sigV4Header{AccessKey: accessKey, Date: now.Format(scopeDateFormat), Region: region, Service: "s3",
		SignedHeaders: []string{"host", "x-amz-content-sha256", "x-amz-date"}}
	query, _ := canonicalQuery(r.URL.RawQuery, false)
	uri := uriEncode(r.URL.Path, false)
	if uri == "" {
		uri = "/"
	}
	creq := r.Method + "\n" + uri + "\n" + query + "\n" + canonicalHeaders(r, sh.SignedHeaders) + "\n" +
		strings.Join(sh.SignedHeaders, ";") + "\n" + emptySHA256
	sts := sigV4Algorithm + "\n" + amzDate + "\n" + sh.scope() + "\n" + sha256Hex(creq)
	sig := hex.EncodeToString(hmacSHA256(signingKey(secretKey, sh.Date, region, "s3"), sts))
	r.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		sigV4Algorithm, accessKey, sh.scope(), strings.Join(sh.SignedHeaders, ";"), sig))
}
