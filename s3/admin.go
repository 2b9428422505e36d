package s3

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
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

// SignV4 signs r with Signature V4 as accessKey/secretKey in region at
// time now: it sets Host (if empty), X-Amz-Date, X-Amz-Content-Sha256 and
// Authorization, signing the path, the query, host and every x-amz-* and
// x-cairn-* header r carries. The payload hash is the caller's
// X-Amz-Content-Sha256 if set (e.g. UNSIGNED-PAYLOAD for a body streamed
// through), else that of an empty body. For the admin path's clients, and
// for the web console, which acts as its user through the Handler
// in-process.
func SignV4(r *http.Request, accessKey, secretKey, region string, now time.Time) {
	if r.Host == "" {
		r.Host = r.URL.Host
	}
	now = now.UTC()
	amzDate := now.Format(amzDateFormat)
	r.Header.Set("X-Amz-Date", amzDate)
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = emptySHA256
		r.Header.Set("X-Amz-Content-Sha256", payload)
	}
	signed := []string{"host"}
	for name := range r.Header {
		if l := strings.ToLower(name); strings.HasPrefix(l, "x-amz-") || strings.HasPrefix(l, "x-cairn-") {
			signed = append(signed, l)
		}
	}
	slices.Sort(signed)
	sh := sigV4Header{AccessKey: accessKey, Date: now.Format(scopeDateFormat), Region: region, Service: "s3", SignedHeaders: signed}
	query, _ := canonicalQuery(r.URL.RawQuery, false)
	uri := uriEncode(r.URL.Path, false)
	if uri == "" {
		uri = "/"
	}
	creq := r.Method + "\n" + uri + "\n" + query + "\n" + canonicalHeaders(r, sh.SignedHeaders) + "\n" +
		strings.Join(sh.SignedHeaders, ";") + "\n" + payload
	sts := sigV4Algorithm + "\n" + amzDate + "\n" + sh.scope() + "\n" + sha256Hex(creq)
	sig := hex.EncodeToString(hmacSHA256(signingKey(secretKey, sh.Date, region, "s3"), sts))
	r.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		sigV4Algorithm, accessKey, sh.scope(), strings.Join(sh.SignedHeaders, ";"), sig))
}
