package wire

// Request signing (docs/design/node-protocol.md, "Authentication"). Every
// request carries these headers and "Authorization: CAIRN-HMAC-SHA256
// Credential=ROLE/NAME, Signature=<64 hex>", an HMAC-SHA256 under the key
// derived from the cluster secret for ROLE/NAME over that key id, the
// request's method, host, escaped path, query, HeaderDate, HeaderNonce,
// HeaderContentSHA256 and the values of HeaderIdentity and HeaderRepair.
const (
	// AuthScheme names the signature in the Authorization header.
	AuthScheme = "CAIRN-HMAC-SHA256"
	// HeaderDate is when the request was signed: Unix seconds, decimal.
	HeaderDate = "X-Cairn-Date"
	// HeaderNonce is 32 lower-case hex digits (16 random bytes), never
	// reused: the node refuses a nonce it has seen within the skew window.
	HeaderNonce = "X-Cairn-Nonce"
	// HeaderContentSHA256 is the SHA-256 of the body (64 lower-case hex),
	// or UnsignedPayload for a streamed body.
	HeaderContentSHA256 = "X-Cairn-Content-Sha256"
	// UnsignedPayload marks a streamed body the signature does not cover
	// (shard PUTs, repair partials): its integrity rests on the CRCs the
	// protocol already carries, not on the signature.
	UnsignedPayload = "UNSIGNED-PAYLOAD"
)
