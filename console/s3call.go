package console

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"

	"cairn/s3"
)

// maxCapture bounds the S3 response body the console reads to answer a
// call (listings of pageSize keys fit many times over).
const maxCapture = 4 << 20

// consoleHost is the Host of the S3 requests the console makes
// in-process; the gateway serves path-style requests for any host.
const consoleHost = "console.invalid"

// s3Request builds the S3 request for bucket/key (both "" for the
// service, key "" for a bucket) with query, headers hdr and body (nil:
// empty; else size bytes, which the caller vouches for), signed as s's
// user, in r's context.
func (c *Console) s3Request(r *http.Request, s *session, method, bucket, key string, query url.Values, hdr http.Header, body io.Reader, size int64) *http.Request {
	path := "/"
	if bucket != "" {
		path += bucket
		if key != "" {
			path += "/" + key
		}
	}
	u := &url.URL{Scheme: "http", Host: consoleHost, Path: path, RawQuery: query.Encode()}
	req := (&http.Request{Method: method, URL: u, Host: consoleHost, Header: http.Header{},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: r.RemoteAddr}).WithContext(r.Context())
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.Body, req.ContentLength = io.NopCloser(body), size
	}
	s3.SignV4(req, s.accessKey, s.secretKey, c.cfg.Region, c.cfg.Now())
	return req
}

// result is a captured S3 response.
type result struct {
	status int
	header http.Header
	body   []byte // at most maxCapture bytes
}

// call serves an S3 request with an empty body through the gateway as s's
// user and captures the response.
func (c *Console) call(r *http.Request, s *session, method, bucket, key string, query url.Values, hdr http.Header) result {
	return c.callBody(nil, r, s, method, bucket, key, query, hdr, nil, 0)
}

// callBody is call with a request body; w (if not nil) is the console's
// response writer, which the gateway's read and write deadlines reach
// through the capture.
func (c *Console) callBody(w http.ResponseWriter, r *http.Request, s *session, method, bucket, key string, query url.Values, hdr http.Header, body io.Reader, size int64) result {
	cw := &capture{under: w, header: http.Header{}}
	c.cfg.S3.ServeHTTP(cw, c.s3Request(r, s, method, bucket, key, query, hdr, body, size))
	if cw.status == 0 {
		cw.status = http.StatusOK
	}
	return result{status: cw.status, header: cw.header, body: cw.buf.Bytes()}
}

// s3ErrorBody is the XML body of an S3 error.
type s3ErrorBody struct {
	Code    string
	Message string
}

// writeError relays a failed S3 response as the console's JSON error,
// with the S3 status, code and message.
func (res result) writeError(w http.ResponseWriter) {
	var e s3ErrorBody
	if xml.Unmarshal(res.body, &e) != nil || e.Code == "" {
		e.Code, e.Message = http.StatusText(res.status), "the gateway answered "+http.StatusText(res.status)
	}
	writeError(w, res.status, e.Code, e.Message)
}

// callXML serves a GET of bucket ("" for the service) with query
// through the gateway as s's user and decodes its XML answer into v. It
// returns false after answering w with the error if the gateway refused
// or the answer does not parse.
func (c *Console) callXML(w http.ResponseWriter, r *http.Request, s *session, bucket string, query url.Values, v any) bool {
	res := c.call(r, s, http.MethodGet, bucket, "", query, nil)
	if res.status != http.StatusOK {
		res.writeError(w)
		return false
	}
	if err := xml.Unmarshal(res.body, v); err != nil {
		writeError(w, http.StatusBadGateway, "BadGateway", "the gateway's answer does not parse: "+err.Error())
		return false
	}
	return true
}

// capture is the http.ResponseWriter the gateway answers the console's
// calls into: it keeps the status, headers and up to maxCapture bytes of
// the body. Unwrap hands http.ResponseController the console's own
// writer (if any), so the gateway's read and write deadlines apply to the
// browser's connection; Flush is a no-op so that nothing reaches that
// writer early.
type capture struct {
	under  http.ResponseWriter
	header http.Header
	status int
	buf    bytes.Buffer
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	if room := maxCapture - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capture) Flush() {}

func (c *capture) Unwrap() http.ResponseWriter { return c.under }

// relay is the http.ResponseWriter a download is served into: a success
// (2xx) goes straight to the browser with the headers a download needs;
// anything else is captured and answered as a JSON error afterwards.
type relay struct {
	capture
	filename string // for Content-Disposition
	passing  bool   // the status was a success: writes go to under
}

func (d *relay) WriteHeader(status int) {
	if d.status != 0 {
		return
	}
	d.status = status
	if status < 200 || status > 299 {
		return
	}
	d.passing = true
	h := d.under.Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Range", "Etag", "Last-Modified", "Accept-Ranges"} {
		if v := d.header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+attrEncode(d.filename))
	// The object's bytes are the user's: never run them as the console's
	// page, even if a browser were to render them.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	d.under.WriteHeader(status)
}

// attrEncode percent-encodes s as an RFC 5987 ext-value: every byte but
// the attr-chars (letters, digits and !#$&+-.^_`|~).
func attrEncode(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func (d *relay) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	if d.passing {
		return d.under.Write(p)
	}
	return d.capture.Write(p)
}

func (d *relay) Flush() {
	if d.passing {
		_ = http.NewResponseController(d.under).Flush()
	}
}

// errorBody is the JSON body of every console error.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Code: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"InternalError","error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
