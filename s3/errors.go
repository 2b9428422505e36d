package s3

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"cairn"
	"cairn/client"
	"cairn/crypt"
	"cairn/placement"
)

// Error is an S3 error: the Code and HTTP Status a client sees in the XML
// error body. The values below are sentinels: the gateway wraps them with
// fmt.Errorf("...: %w", ErrNoSuchKey) for context, and apiError (the one
// place errors become S3 errors) finds them with errors.As.
type Error struct {
	Code    string // S3 error code, e.g. "NoSuchKey"
	Status  int    // HTTP status
	Message string // human-readable default message
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Gateway errors, grouped by what raises them. Each is an S3 error code.
var (
	// Authentication (see auth.go).
	ErrAccessDenied          = &Error{"AccessDenied", http.StatusForbidden, "Access Denied."}
	ErrInvalidAccessKeyID    = &Error{"InvalidAccessKeyId", http.StatusForbidden, "The AWS access key ID you provided does not exist in our records."}
	ErrSignatureDoesNotMatch = &Error{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	ErrRequestTimeTooSkewed  = &Error{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	ErrExpiredPresign        = &Error{"AccessDenied", http.StatusForbidden, "Request has expired."}
	ErrAuthHeaderMalformed   = &Error{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header is malformed."}
	ErrAuthQueryMalformed    = &Error{"AuthorizationQueryParametersError", http.StatusBadRequest, "The presigned URL's authorization query parameters are malformed."}
	ErrUnsupportedAuth       = &Error{"InvalidRequest", http.StatusBadRequest, "Please use AWS4-HMAC-SHA256."}
	ErrContentSHA256Mismatch = &Error{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}
	ErrMissingContentSHA256  = &Error{"InvalidRequest", http.StatusBadRequest, "Missing required header for this request: x-amz-content-sha256."}
	ErrInvalidDigest         = &Error{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified is not valid."}
	ErrBadDigest             = &Error{"BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."}
	ErrIncompleteBody        = &Error{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	ErrMissingContentLength  = &Error{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	ErrMalformedChunk        = &Error{"IncompleteBody", http.StatusBadRequest, "The aws-chunked body is malformed."}

	// Buckets.
	ErrNoSuchBucket            = &Error{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist."}
	ErrBucketNotEmpty          = &Error{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty."}
	ErrBucketAlreadyOwnedByYou = &Error{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."}
	ErrInvalidBucketName       = &Error{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."}
	ErrInvalidPolicy           = &Error{"InvalidArgument", http.StatusBadRequest, "The x-cairn-policy header names no valid cairn policy."}

	// Objects.
	ErrNoSuchKey          = &Error{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."}
	ErrKeyTooLong         = &Error{"KeyTooLongError", http.StatusBadRequest, "Your key is too long."}
	ErrInvalidRange       = &Error{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable."}
	ErrPreconditionFailed = &Error{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."}
	// ErrConditionalRequestConflict: a conditional write lost to concurrent
	// changes of the key (S3: retry the request).
	ErrConditionalRequestConflict = &Error{"ConditionalRequestConflict", http.StatusConflict, "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part."}
	ErrInvalidPartNumber          = &Error{"InvalidPartNumber", http.StatusRequestedRangeNotSatisfiable, "The requested partnumber is not satisfiable."}
	ErrNotModified                = &Error{"NotModified", http.StatusNotModified, "Not Modified."}
	ErrInvalidCopySource          = &Error{"InvalidArgument", http.StatusBadRequest, "Copy Source must mention the source bucket and key: sourcebucket/sourcekey."}
	ErrInvalidCopyRequest         = &Error{"InvalidRequest", http.StatusBadRequest, "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata."}
	ErrMetadataTooLarge           = &Error{"MetadataTooLarge", http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."}

	// Multipart uploads.
	ErrNoSuchUpload     = &Error{"NoSuchUpload", http.StatusNotFound, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed."}
	ErrInvalidPart      = &Error{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag."}
	ErrInvalidPartOrder = &Error{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order. The parts list must be specified in order by part number."}
	ErrEntityTooSmall   = &Error{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."}

	// Request shape.
	ErrInvalidArgument    = &Error{"InvalidArgument", http.StatusBadRequest, "Invalid Argument."}
	ErrMalformedXML       = &Error{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrEntityTooLarge     = &Error{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."}
	ErrMethodNotAllowed   = &Error{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	ErrNotImplemented     = &Error{"NotImplemented", http.StatusNotImplemented, "A header or query you provided implies functionality that is not implemented."}
	ErrInvalidRequest     = &Error{"InvalidRequest", http.StatusBadRequest, "Invalid Request."}
	ErrRequestTimeout     = &Error{"RequestTimeout", http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period."}
	ErrOperationAborted   = &Error{"OperationAborted", http.StatusConflict, "A conflicting conditional operation is currently in progress against this resource. Please try again."}
	ErrSlowDown           = &Error{"SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."}
	ErrServiceUnavailable = &Error{"ServiceUnavailable", http.StatusServiceUnavailable, "Not enough storage disks or nodes, or the metadata store, are available; please retry."}
	ErrInsufficientSpace  = &Error{"InsufficientStorage", http.StatusInsufficientStorage, "The storage cluster is out of space."}
	ErrInternal           = &Error{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
)

// apiError is the one place where errors become S3 errors: gateway
// sentinels first (they carry the resource context: NoSuchBucket vs
// NoSuchKey), then cairn's domain sentinels, then context errors.
// Anything else is an InternalError.
//
// The order among cairn's sentinels matters where a chain holds several:
// the cluster's state (out of space, unavailable) wins over ErrNotFound,
// which means a missing key only when nothing below failed. cairn.ErrAuth
// and ErrExists that reach here come from below the gateway (a node or the
// metadata store refusing the cluster's own credentials, a version ID
// taken): the client's own authentication errors and an existing bucket
// are gateway sentinels.
func apiError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, client.ErrNoSuchUpload):
		return ErrNoSuchUpload
	case errors.Is(err, client.ErrInvalidPart):
		return ErrInvalidPart
	case errors.Is(err, client.ErrInvalidPartOrder):
		return ErrInvalidPartOrder
	case errors.Is(err, client.ErrEntityTooSmall):
		return ErrEntityTooSmall
	case errors.Is(err, crypt.ErrWrongKey): // an SSE-C key that is not the object's
		return ErrAccessDenied
	case errors.Is(err, client.ErrEncryptionMismatch):
		return ErrSSEMismatch
	case errors.Is(err, client.ErrNoKeyService):
		return ErrNoKMS
	case errors.Is(err, client.ErrBusy): // the gateway's buffer memory is taken
		return ErrSlowDown
	case errors.Is(err, cairn.ErrNoSpace): // before ErrUnavailable, which wraps it
		return ErrInsufficientSpace
	case errors.Is(err, cairn.ErrUnavailable):
		return ErrServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline inside the cluster (the request's own context has
		// none): a dependency did not answer in time.
		return ErrServiceUnavailable
	case errors.Is(err, context.Canceled):
		// The request's context ends when the client goes away: nobody
		// reads this answer.
		return ErrRequestTimeout
	case errors.Is(err, cairn.ErrNotFound):
		return ErrNoSuchKey
	case errors.Is(err, cairn.ErrBucketNotEmpty):
		return ErrBucketNotEmpty
	case errors.Is(err, cairn.ErrLocked): // Object Lock, the store's refusal
		return ErrObjectLocked
	case errors.Is(err, cairn.ErrConflict):
		return ErrOperationAborted
	case errors.Is(err, cairn.ErrInvalid):
		return ErrInvalidArgument
	}
	return ErrInternal // ErrCorrupt, ErrAuth, ErrExists, anything else
}

// causeError puts an error from below the gateway (the data path, the
// metadata store, the connection) under the S3 error it means to the
// client. errors.Is and errors.As find both. The client sees the S3
// error's own message only, because the cause's text may name files,
// disks, hosts or versions; the log gets all of it.
type causeError struct {
	s3    *Error
	cause error
}

func (c *causeError) Error() string   { return c.s3.Error() + ": " + c.cause.Error() }
func (c *causeError) Unwrap() []error { return []error{c.s3, c.cause} }

// withCause returns cause under the S3 error e (see causeError).
func withCause(e *Error, cause error) error { return &causeError{s3: e, cause: cause} }

// retryAfter is the Retry-After (seconds) of a 503: disks and nodes come
// back in seconds (a restart) or not soon (a lost disk); SDKs back off
// on their own either way.
const retryAfter = "5"

// publicMessage is the Message of the error body: the S3 error's own,
// and a detail only where its text is known to be the client's business.
// For a 4xx that is the text the gateway wrapped its sentinel with ("?acl",
// "max-keys \"x\"", a bucket naming rule), never for authentication
// failures (403: no hints to a prober) and never for an error holding a
// cause from below (withCause) or made below the gateway (apiError mapped
// a cairn sentinel). For a 5xx it is only the counts of a
// placement.TooFewDisksError.
func publicMessage(e *Error, err error) string {
	var detail string
	var few *placement.TooFewDisksError
	var cause *causeError
	var gw *Error
	switch {
	case e.Status >= 500:
		if errors.As(err, &few) {
			detail = fmt.Sprintf("placement needs %d writable disks, the cluster has %d", few.Need, few.Have)
		}
	case e.Status == http.StatusForbidden, errors.As(err, &cause), !errors.As(err, &gw), err == e:
	default:
		detail = strings.Replace(err.Error(), e.Error()+": ", "", 1)
		detail = strings.Trim(strings.Replace(detail, e.Error(), "", 1), ": ")
	}
	if detail == "" {
		return e.Message
	}
	return e.Message + " (" + detail + ")"
}

// errorBody is the S3 XML error document.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
	HostID    string   `xml:"HostId"`
	Key       string   `xml:"Key,omitempty"`
	Bucket    string   `xml:"BucketName,omitempty"`
}
