package s3

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"

	"cairn"
	"cairn/client"
	"cairn/crypt"
)

// Server-side encryption headers (docs/design/encryption.md): SSE-S3
// (x-amz-server-side-encryption: AES256) and SSE-C (the customer's key
// with every request, and its copy-source variants for CopyObject).
const (
	hdrSSE         = "X-Amz-Server-Side-Encryption"
	hdrSSEKMSKeyID = "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"
	hdrSSECAlg     = "X-Amz-Server-Side-Encryption-Customer-Algorithm"
	hdrSSECKey     = "X-Amz-Server-Side-Encryption-Customer-Key"
	hdrSSECKeyMD5  = "X-Amz-Server-Side-Encryption-Customer-Key-Md5"
	hdrCopySSEC    = "X-Amz-Copy-Source-Server-Side-Encryption-Customer-"
	sseAES256      = "AES256"
)

// SSE errors, with S3's codes and messages.
var (
	ErrSSECInsecure = &Error{"InvalidRequest", http.StatusBadRequest, "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection."}
	ErrSSECHeaders  = &Error{"InvalidArgument", http.StatusBadRequest, "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key."}
	ErrSSECKeyMD5   = &Error{"InvalidArgument", http.StatusBadRequest, "The calculated MD5 hash of the key did not match the hash that was provided."}
	ErrSSECAlg      = &Error{"InvalidEncryptionAlgorithmError", http.StatusBadRequest, "The encryption request you specified is not valid. The valid value is AES256."}
	ErrSSEMismatch  = &Error{"InvalidRequest", http.StatusBadRequest, "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object."}
	ErrNoKMS        = &Error{"NotImplemented", http.StatusNotImplemented, "Server-side encryption with S3 managed keys needs the gateway's --kms-key-file."}
	// A request for SSE-KMS (aws:kms, aws:kms:dsse, or a KMS key ID),
	// which cairn does not offer.
	ErrSSEKMS = &Error{"NotImplemented", http.StatusNotImplemented, "Server-side encryption with KMS keys (SSE-KMS) is not supported; SSE-S3 (AES256) and SSE-C are."}
	// UploadPart of an upload whose encryption the request does not
	// match: no SSE-C key for an SSE-C upload, or one for another upload.
	ErrSSEPartParams = &Error{"InvalidRequest", http.StatusBadRequest, "The multipart upload initiate requested encryption. Subsequent part requests must include the appropriate encryption parameters."}
	// UploadPart (or CompleteMultipartUpload) of an SSE-C upload with
	// another key than the one it was created with.
	ErrSSEPartKey = &Error{"InvalidRequest", http.StatusBadRequest, "The provided encryption parameters did not match the ones used originally."}
)

// customerKey is an SSE-C key from a request and its MD5 as sent.
type customerKey struct {
	key []byte
	md5 string // base64, as the headers carry it
}

// sseCustomerKey parses the SSE-C headers (prefix: hdrSSECAlg's up to
// "Customer-", or hdrCopySSEC for the copy source): nil if none is
// present, an error if they are incomplete, name another algorithm, or
// the key is not 32 bytes or does not match its MD5; refused over plain
// HTTP (no TLS, no X-Forwarded-Proto: https) unless
// Config.AllowInsecureSSEC.
func (h *Handler) sseCustomerKey(q *request, copySource bool) (*customerKey, error) {
	hd := q.r.Header
	alg, key, sum := hd.Get(hdrSSECAlg), hd.Get(hdrSSECKey), hd.Get(hdrSSECKeyMD5)
	if copySource {
		alg, key, sum = hd.Get(hdrCopySSEC+"Algorithm"), hd.Get(hdrCopySSEC+"Key"), hd.Get(hdrCopySSEC+"Key-Md5")
	}
	if alg == "" && key == "" && sum == "" {
		return nil, nil
	}
	// Over TLS, or behind a proxy that terminated it (X-Forwarded-Proto,
	// as objectURL trusts it: the check protects the client's own key).
	secure := q.r.TLS != nil || q.r.Header.Get("X-Forwarded-Proto") == "https"
	if !secure && !h.cfg.AllowInsecureSSEC {
		return nil, ErrSSECInsecure
	}
	if alg != sseAES256 {
		if alg == "" {
			return nil, ErrSSECHeaders
		}
		return nil, ErrSSECAlg
	}
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(k) != crypt.KeySize {
		return nil, ErrSSECHeaders
	}
	s := md5.Sum(k)
	if sum == "" || base64.StdEncoding.EncodeToString(s[:]) != sum {
		return nil, ErrSSECKeyMD5
	}
	return &customerKey{key: k, md5: sum}, nil
}

// requestSSE is the encryption a PUT, a copy's destination or a
// CreateMultipartUpload asks for: SSE-S3 (x-amz-server-side-encryption:
// AES256), SSE-C, or nil (the data path applies the bucket's default).
func (h *Handler) requestSSE(q *request) (*client.SSE, *customerKey, error) {
	ck, err := h.sseCustomerKey(q, false)
	if err != nil {
		return nil, nil, err
	}
	switch v := q.r.Header.Get(hdrSSE); {
	case v != "" && ck != nil:
		return nil, nil, fmt.Errorf("%w: both SSE-S3 and SSE-C", ErrInvalidArgument)
	case v == sseAES256:
		return &client.SSE{Scheme: cairn.SSES3}, nil, nil
	case v == "aws:kms" || v == "aws:kms:dsse" || q.r.Header.Get(hdrSSEKMSKeyID) != "":
		return nil, nil, ErrSSEKMS
	case v != "":
		return nil, nil, fmt.Errorf("%w: x-amz-server-side-encryption %q", ErrInvalidArgument, v)
	case ck != nil:
		return &client.SSE{Scheme: cairn.SSEC, CustomerKey: ck.key}, ck, nil
	}
	return nil, nil, nil
}

// checkObjectKey checks a request's SSE-C key against an object before
// anything of it is read or announced (GET, HEAD, a copy's source):
// ErrSSEMismatch if an SSE-C object comes without its key or a key comes
// for another object, AccessDenied if it is the wrong key.
func checkObjectKey(m *cairn.Manifest, ck *customerKey) error {
	isC := m.Encryption != nil && m.Encryption.Scheme == cairn.SSEC
	switch {
	case isC && ck == nil, !isC && ck != nil:
		return ErrSSEMismatch
	case isC:
		if _, err := crypt.UnsealCustomer(ck.key, m.Encryption); err != nil {
			return withCause(ErrAccessDenied, err)
		}
	}
	return nil
}

// checkUploadKey checks a part's (or a completion's) SSE-C key against
// its upload before any of the body is read, with S3's answers:
// ErrSSEPartParams if an SSE-C upload comes without its key or a key
// comes for another upload, ErrSSEPartKey if it is the wrong key.
func checkUploadKey(u cairn.Upload, ck *customerKey) error {
	isC := u.Encryption != nil && u.Encryption.Scheme == cairn.SSEC
	switch {
	case isC && ck == nil, !isC && ck != nil:
		return ErrSSEPartParams
	case isC:
		if _, err := crypt.UnsealCustomer(ck.key, u.Encryption); err != nil {
			return withCause(ErrSSEPartKey, err)
		}
	}
	return nil
}

// keyOf is the key to pass to the data path (nil for none).
func (ck *customerKey) keyOf() []byte {
	if ck == nil {
		return nil
	}
	return ck.key
}

// setSSEHeaders echoes an object's encryption as S3 does: the scheme for
// SSE-S3, the algorithm and the key's MD5 (the request's) for SSE-C.
func setSSEHeaders(w http.ResponseWriter, e *cairn.Encryption, ck *customerKey) {
	if e == nil {
		return
	}
	hd := w.Header()
	switch e.Scheme {
	case cairn.SSES3:
		hd.Set(hdrSSE, sseAES256)
	case cairn.SSEC:
		hd.Set(hdrSSECAlg, sseAES256)
		if ck != nil {
			hd.Set(hdrSSECKeyMD5, ck.md5)
		}
	}
}

// Bucket default encryption (PutBucketEncryption, GetBucketEncryption,
// DeleteBucketEncryption): SSE-S3 for every new object that asks for no
// encryption of its own.

// ErrNoEncryptionConfig: GetBucketEncryption of a bucket without one.
var ErrNoEncryptionConfig = &Error{"ServerSideEncryptionConfigurationNotFoundError", http.StatusNotFound, "The server side encryption configuration was not found."}

// sseConfig is S3's ServerSideEncryptionConfiguration document.
type sseConfig struct {
	XMLName xml.Name  `xml:"ServerSideEncryptionConfiguration"`
	NS      string    `xml:"xmlns,attr,omitempty"`
	Rules   []sseRule `xml:"Rule"`
}

type sseRule struct {
	Default *struct {
		Algorithm string `xml:"SSEAlgorithm"`
		KMSKeyID  string `xml:"KMSMasterKeyID,omitempty"`
	} `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKeyEnabled bool `xml:"BucketKeyEnabled"`
}

func (h *Handler) bucketEncryption(q *request) error {
	if _, err := h.bucket(q, q.bucket); err != nil {
		return err
	}
	ctx := q.r.Context()
	switch q.r.Method {
	case http.MethodGet:
		b, err := h.cfg.Meta.Bucket(ctx, q.bucket)
		if err != nil {
			return h.objectErr(ctx, q.bucket, err)
		}
		if b.Encryption != cairn.SSES3 {
			return ErrNoEncryptionConfig
		}
		r := sseRule{}
		r.Default = &struct {
			Algorithm string `xml:"SSEAlgorithm"`
			KMSKeyID  string `xml:"KMSMasterKeyID,omitempty"`
		}{Algorithm: sseAES256}
		return h.writeXML(q, http.StatusOK, sseConfig{NS: s3NS, Rules: []sseRule{r}})
	case http.MethodPut:
		var c sseConfig
		if err := h.readXML(q, &c); err != nil {
			return err
		}
		if len(c.Rules) != 1 || c.Rules[0].Default == nil {
			return fmt.Errorf("%w: want one Rule with ApplyServerSideEncryptionByDefault", ErrMalformedXML)
		}
		switch d := c.Rules[0].Default; {
		case d.Algorithm == "aws:kms" || d.Algorithm == "aws:kms:dsse":
			return ErrSSEKMS
		case d.Algorithm != sseAES256:
			return fmt.Errorf("%w: SSEAlgorithm %q", ErrMalformedXML, d.Algorithm)
		}
		if err := h.cfg.Meta.SetBucketEncryption(ctx, q.bucket, cairn.SSES3); err != nil {
			return h.objectErr(ctx, q.bucket, err)
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	case http.MethodDelete:
		if err := h.cfg.Meta.SetBucketEncryption(ctx, q.bucket, ""); err != nil {
			return h.objectErr(ctx, q.bucket, err)
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return ErrMethodNotAllowed
}
