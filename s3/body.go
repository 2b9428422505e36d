package s3

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
)

// Body readers. Each one checks the bytes it passes on and, when a check
// fails, returns an error instead of io.EOF, sticky on every later Read.
// client.Put reads to EOF before it commits, so a failed check means
// nothing becomes visible: verification never needs to buffer the body.

// wireBody turns a connection that ended early into ErrIncompleteBody
// (net/http reports io.ErrUnexpectedEOF, which a reader might otherwise
// take for a clean end of a short object), and one whose idle deadline
// passed into RequestTimeout, as S3 does.
//
// If extend is set, it is called before each Read to push the
// connection's read deadline forward: a client that stops sending for
// longer than the idle timeout fails the request instead of holding it.
type wireBody struct {
	r      io.Reader
	extend func()
	err    error // sticky
}

func (b *wireBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.extend != nil {
		b.extend()
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		var e *Error
		switch {
		case errors.As(err, &e):
		case errors.Is(err, os.ErrDeadlineExceeded): // the idle deadline extend pushes forward
			err = withCause(ErrRequestTimeout, err)
		default: // the connection's error names addresses: the client sees none of it
			err = withCause(ErrIncompleteBody, err)
		}
		b.err = err
	} else if err == io.EOF {
		b.err = io.EOF
	}
	return n, err
}

// digestReader hashes what passes through and at EOF compares the sum
// with want; a mismatch is returned as mismatch.
type digestReader struct {
	r        io.Reader
	h        hash.Hash
	want     []byte
	mismatch error
	err      error // sticky
}

func newSHA256Reader(r io.Reader, wantHex string) io.Reader {
	want, _ := hex.DecodeString(wantHex)
	return &digestReader{r: r, h: sha256.New(), want: want, mismatch: ErrContentSHA256Mismatch}
}

func newMD5Reader(r io.Reader, want []byte) io.Reader {
	return &digestReader{r: r, h: md5.New(), want: want, mismatch: ErrBadDigest}
}

func (d *digestReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(p)
	d.h.Write(p[:n])
	if err == io.EOF && !bytes.Equal(d.h.Sum(nil), d.want) {
		err = d.mismatch
	}
	if err != nil {
		d.err = err
	}
	return n, err
}

// Limits of the aws-chunked encoding.
const (
	maxChunkHeader = 4096     // bytes of one chunk-size line
	maxChunkSize   = 1 << 34  // bytes of one chunk's data
	maxTrailer     = 16 << 10 // bytes of the trailer section
)

// chunkedReader decodes an aws-chunked body ("STREAMING-…" payloads):
//
//	hex-size[;chunk-signature=sig]\r\n data \r\n … 0[;chunk-signature=sig]\r\n [trailer lines] \r\n
//
// When signed, each chunk's signature chains from the previous one (the
// first from the request's seed signature) and is checked when the
// chunk's last byte has been read, before any byte of the next chunk is
// returned; with a -TRAILER payload a signed trailer is checked too.
type chunkedReader struct {
	r          *bufio.Reader
	signed     bool
	trailer    bool // the payload ends with trailer headers
	key        []byte
	amzDate    string
	scope      string
	prevSig    string
	remaining  int64  // data bytes left in the current chunk
	claimed    string // the current chunk's signature
	h          hash.Hash
	inChunk    bool
	err        error // sticky; io.EOF after the last chunk
	decodedLen int64
	want       int64     // x-amz-decoded-content-length, or -1
	sumName    string    // the x-amz-checksum-* the trailer must carry ("" = none)
	sum        hash.Hash // its hash over the decoded data
}

func newChunkedReader(r io.Reader, a *authResult) *chunkedReader {
	return &chunkedReader{
		r:       bufio.NewReaderSize(r, 32<<10),
		signed:  a.payload == streamingPayload || a.payload == streamingPayloadTrailer,
		trailer: a.payload == streamingPayloadTrailer || a.payload == streamingUnsignedTrailer,
		key:     a.signingKey, amzDate: a.amzDate, scope: a.scope, prevSig: a.seedSig,
		h: sha256.New(), want: -1,
	}
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	for c.remaining == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	if c.sum != nil {
		c.sum.Write(p[:n])
	}
	c.remaining -= int64(n)
	c.decodedLen += int64(n)
	if err != nil {
		if err == io.EOF {
			err = fmt.Errorf("%w: the body ended inside a chunk", ErrIncompleteBody)
		}
		c.err = err
		return n, err
	}
	return n, nil
}

// next finishes the current chunk (CRLF, signature) and reads the next
// chunk's header; at the last chunk it reads the trailer and returns
// io.EOF.
func (c *chunkedReader) next() error {
	if c.inChunk {
		if err := c.expectCRLF(); err != nil {
			return err
		}
		if err := c.checkChunkSig(); err != nil {
			return err
		}
		c.inChunk = false
	}
	line, err := c.readLine()
	if err != nil {
		return err
	}
	sizeStr, ext, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeStr), 16, 64)
	if err != nil || size < 0 || size > maxChunkSize {
		return fmt.Errorf("%w: chunk size %q", ErrMalformedChunk, sizeStr)
	}
	c.claimed = ""
	if c.signed {
		sig, ok := strings.CutPrefix(ext, "chunk-signature=")
		if !ok || !validSignature(sig) {
			return fmt.Errorf("%w: chunk without a valid chunk-signature", ErrMalformedChunk)
		}
		c.claimed = sig
	}
	c.h.Reset()
	if size > 0 {
		c.remaining, c.inChunk = size, true
		return nil
	}
	if err := c.checkChunkSig(); err != nil { // the final, empty chunk is signed too
		return err
	}
	if err := c.readTrailer(); err != nil {
		return err
	}
	if c.want >= 0 && c.decodedLen != c.want {
		return fmt.Errorf("%w: %d bytes decoded, x-amz-decoded-content-length is %d", ErrIncompleteBody, c.decodedLen, c.want)
	}
	return io.EOF
}

func (c *chunkedReader) checkChunkSig() error {
	if !c.signed {
		return nil
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.amzDate + "\n" + c.scope + "\n" + c.prevSig + "\n" + emptySHA256 + "\n" + hex.EncodeToString(c.h.Sum(nil))
	got := hex.EncodeToString(hmacSHA256(c.key, sts))
	if !hmac.Equal([]byte(got), []byte(c.claimed)) {
		return fmt.Errorf("%w: chunk signature", ErrSignatureDoesNotMatch)
	}
	c.prevSig = got
	return nil
}

func (c *chunkedReader) expectCRLF() error {
	var b [2]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return fmt.Errorf("%w: the body ended after a chunk", ErrIncompleteBody)
	}
	if b != [2]byte{'\r', '\n'} {
		return fmt.Errorf("%w: a chunk is longer than its size", ErrMalformedChunk)
	}
	return nil
}

// readLine reads one CRLF- (or LF-) terminated line of at most
// maxChunkHeader bytes.
func (c *chunkedReader) readLine() (string, error) {
	var b []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxChunkHeader {
			return "", fmt.Errorf("%w: chunk header too long", ErrMalformedChunk)
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return "", fmt.Errorf("%w: the body ended in a chunk header", ErrIncompleteBody)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// readTrailer consumes what follows the final chunk. Without trailers
// that is one CRLF. With trailers it is "name:value" lines and, when
// signed, an x-amz-trailer-signature line, whose signature chains from
// the final chunk's.
func (c *chunkedReader) readTrailer() error {
	rest, err := io.ReadAll(io.LimitReader(c.r, maxTrailer+1))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err // wireBody's
		}
		return withCause(ErrIncompleteBody, err)
	}
	if len(rest) > maxTrailer {
		return fmt.Errorf("%w: trailer too long", ErrMalformedChunk)
	}
	if !c.trailer {
		if s := string(rest); s != "\r\n" && s != "" {
			return fmt.Errorf("%w: data after the final chunk", ErrMalformedChunk)
		}
		return nil
	}
	var canon strings.Builder
	var sig, sumValue string
	for line := range strings.SplitSeq(string(rest), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("%w: trailer line %q", ErrMalformedChunk, line)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "x-amz-trailer-signature" {
			sig = strings.TrimSpace(v)
			continue
		}
		if k == c.sumName {
			sumValue = strings.TrimSpace(v)
		}
		canon.WriteString(k + ":" + strings.TrimSpace(v) + "\n")
	}
	if c.signed {
		sts := "AWS4-HMAC-SHA256-TRAILER\n" + c.amzDate + "\n" + c.scope + "\n" + c.prevSig + "\n" + sha256Hex(canon.String())
		if !hmac.Equal([]byte(hex.EncodeToString(hmacSHA256(c.key, sts))), []byte(sig)) {
			return fmt.Errorf("%w: trailer signature", ErrSignatureDoesNotMatch)
		}
	}
	if c.sum != nil {
		if sumValue == "" {
			return fmt.Errorf("%w: the trailer lacks %s", ErrInvalidChecksum, c.sumName)
		}
		want, err := decodeChecksum(c.sumName, sumValue, c.sum)
		if err != nil {
			return err
		}
		if !bytes.Equal(c.sum.Sum(nil), want) {
			return fmt.Errorf("%w: %s", ErrBadChecksum, c.sumName)
		}
	}
	return nil
}
