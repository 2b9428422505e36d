package client

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"cairn"
	"cairn/crypt"
)

// Encryption at rest (docs/design/encryption.md): a PUT with
// PutOptions.SSE encrypts the body before the codec sees it, so shards
// hold only ciphertext; a GET decrypts after decoding, only the segments
// its range touches.

// KeyService seals and unseals data keys with the cluster's master keys
// (SSE-S3). crypt.Keyring implements it from a key file; a remote key
// manager (Vault Transit, KMIP) would implement the same two calls. It
// must be safe for concurrent use.
type KeyService interface {
	// Seal seals dataKey with the current master key and returns that
	// key's ID and the sealed bytes; rand is the source of any nonce the
	// service draws locally.
	Seal(ctx context.Context, dataKey []byte, rand io.Reader) (keyID string, sealed []byte, err error)
	// Unseal opens a data key sealed by master key keyID. An error
	// wrapping cairn.ErrCorrupt means the key is unknown or the sealed
	// bytes do not open.
	Unseal(ctx context.Context, keyID string, sealed []byte) ([]byte, error)
}

var _ KeyService = (*crypt.Keyring)(nil)

// SSE asks for an object to be encrypted at rest (PutOptions.SSE), or
// carries the customer key of an SSE-C request (UploadPart).
type SSE struct {
	Scheme      string // cairn.SSES3 or cairn.SSEC
	CustomerKey []byte // SSE-C: the customer's 32-byte key
}

// GetOptions are per-request settings for GetWith.
type GetOptions struct {
	// CustomerKey is the SSE-C key of an object written with one; it must
	// be nil for any other object.
	CustomerKey []byte
}

// Encryption errors.
var (
	// ErrNoKeyService: an SSE-S3 object is written or read by a client
	// without Config.Keys. Wraps cairn.ErrInvalid.
	ErrNoKeyService = fmt.Errorf("%w: SSE-S3 needs a key service (a master key file)", cairn.ErrInvalid)
	// ErrEncryptionMismatch: a request's encryption parameters do not fit
	// the object or upload: an SSE-C object read without its key, or a
	// key sent for an object that has none. Wraps cairn.ErrInvalid.
	ErrEncryptionMismatch = fmt.Errorf("%w: the request's encryption parameters do not match the object's", cairn.ErrInvalid)
)

// newEncryption draws a data key for a new object (or upload) and seals
// it as sse asks. It returns nil, nil for sse nil.
func (c *Client) newEncryption(ctx context.Context, sse *SSE) (*cairn.Encryption, []byte, error) {
	if sse == nil {
		return nil, nil, nil
	}
	dk, err := crypt.NewDataKey(c.cfg.Rand)
	if err != nil {
		return nil, nil, err
	}
	e := &cairn.Encryption{Scheme: sse.Scheme, Cipher: cairn.Cipher}
	switch sse.Scheme {
	case cairn.SSES3:
		if c.cfg.Keys == nil {
			return nil, nil, ErrNoKeyService
		}
		if e.KeyID, e.SealedKey, err = c.cfg.Keys.Seal(ctx, dk, c.cfg.Rand); err != nil {
			return nil, nil, fmt.Errorf("sealing the data key: %w", err)
		}
	case cairn.SSEC:
		if e.SealedKey, e.KeySalt, e.KeyHMAC, err = crypt.SealCustomer(sse.CustomerKey, dk, c.cfg.Rand); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("%w: encryption scheme %q", cairn.ErrInvalid, sse.Scheme)
	}
	return e, dk, nil
}

// dataKey unseals the data key of e with the key service or the customer
// key: ErrEncryptionMismatch if customerKey is given for SSE-S3 or
// missing for SSE-C, crypt.ErrWrongKey (cairn.ErrAuth) if it is not the
// object's.
func (c *Client) dataKey(ctx context.Context, e *cairn.Encryption, customerKey []byte) ([]byte, error) {
	switch e.Scheme {
	case cairn.SSES3:
		if customerKey != nil {
			return nil, fmt.Errorf("%w: a customer key for an SSE-S3 object", ErrEncryptionMismatch)
		}
		if c.cfg.Keys == nil {
			return nil, ErrNoKeyService
		}
		return c.cfg.Keys.Unseal(ctx, e.KeyID, e.SealedKey)
	case cairn.SSEC:
		if customerKey == nil {
			return nil, fmt.Errorf("%w: an SSE-C object needs its customer key", ErrEncryptionMismatch)
		}
		return crypt.UnsealCustomer(customerKey, e)
	}
	return nil, fmt.Errorf("%w: encryption scheme %q", cairn.ErrCorrupt, e.Scheme)
}

// sealing encrypts one body on its way into store. Its owner calls close
// (or etag) once store returned.
type sealing struct {
	e  *cairn.Encryption
	dk []byte
	h  *asyncHash // MD5 of the plaintext (the ETag); set by wrap
}

// wrap returns the ciphertext of r for the stream bucket/key/version; the
// sealing counts and hashes the plaintext as it passes, the hashing on a
// goroutine of its own (as the putter's MD5 for unencrypted bodies), so
// that the reader only reads and encrypts.
func (s *sealing) wrap(bucket, key, version string, r io.Reader) (io.Reader, error) {
	sc, err := crypt.NewStreamCipher(s.dk, crypt.Stream{Bucket: bucket, Key: key, Version: version})
	if err != nil {
		return nil, err
	}
	s.h = newAsyncHash(r, md5.New())
	return crypt.NewEncrypter(sc, s.h), nil
}

// read returns the plaintext bytes read.
func (s *sealing) read() int64 {
	if s.h == nil {
		return 0
	}
	return s.h.n
}

// close stops the hashing goroutine (idempotent).
func (s *sealing) close() {
	if s.h != nil {
		s.h.sum()
	}
}

// asyncHash reads r and hashes what it read on a goroutine of its own,
// in batches of hashBatch bytes, through a bounded ring of hashBuffers
// buffers. sum (or the end of the owner's use) must be called once reading
// is over; Read must not be called after it.
type asyncHash struct {
	r    io.Reader
	n    int64         // bytes read
	buf  []byte        // the batch being filled; owned by the reader
	q    chan []byte   // batches to hash
	free chan []byte   // hashed batches, for reuse
	done chan struct{} // closed when the hasher has hashed everything sent
	h    hash.Hash     // written by the hasher only until done
	sumd []byte        // h's sum, once taken
}

const (
	hashBatch   = 256 << 10
	hashBuffers = 3
)

func newAsyncHash(r io.Reader, h hash.Hash) *asyncHash {
	a := &asyncHash{r: r, h: h, q: make(chan []byte, hashBuffers-1), free: make(chan []byte, hashBuffers), done: make(chan struct{})}
	for range hashBuffers - 1 {
		a.free <- make([]byte, 0, hashBatch)
	}
	a.buf = make([]byte, 0, hashBatch)
	go func() {
		defer close(a.done)
		for b := range a.q {
			a.h.Write(b)
			a.free <- b[:0]
		}
	}()
	return a
}

func (a *asyncHash) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	a.n += int64(n)
	for rest := p[:n]; len(rest) > 0; {
		k := min(len(rest), hashBatch-len(a.buf))
		a.buf = append(a.buf, rest[:k]...)
		rest = rest[k:]
		if len(a.buf) == hashBatch {
			a.q <- a.buf
			a.buf = <-a.free
		}
	}
	return n, err
}

// sum hands the last batch to the hasher, waits for it and returns the
// hash of everything read.
func (a *asyncHash) sum() []byte {
	if a.sumd == nil {
		if len(a.buf) > 0 {
			a.q <- a.buf
			a.buf = nil
		}
		close(a.q)
		<-a.done
		a.sumd = a.h.Sum(nil)
	}
	return a.sumd
}

// etag is the ETag S3 gives the object: the hex MD5 of the plaintext for
// SSE-S3; for SSE-C, which S3 gives an ETag that is not the data's MD5
// (that would let anyone confirm a guess of the content), the first 16
// bytes of HMAC-SHA256(data key, "cairn sse-c etag" ‖ MD5 of the
// plaintext), in hex.
func (s *sealing) etag() string {
	sum := s.h.sum()
	if s.e.Scheme == cairn.SSES3 {
		return hex.EncodeToString(sum)
	}
	h := hmac.New(sha256.New, s.dk)
	h.Write([]byte("cairn sse-c etag"))
	h.Write(sum)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// discardHash is a hash.Hash that hashes nothing: the ciphertext's MD5 is
// of no use (the ETag is the plaintext's), and it would cost a pass over
// the data.
type discardHash struct{}

func (discardHash) Write(p []byte) (int, error) { return len(p), nil }
func (discardHash) Sum(b []byte) []byte         { return b }
func (discardHash) Reset()                      {}
func (discardHash) Size() int                   { return 0 }
func (discardHash) BlockSize() int              { return 64 }

// GetWith is Get with options: it reads encrypted objects, decrypting the
// segments the range touches (docs/design/encryption.md, "Ranged reads").
// off and length are in plaintext bytes and the manifest's ContentSize
// bounds them. Errors besides Get's: ErrEncryptionMismatch,
// ErrNoKeyService, crypt.ErrWrongKey (the SSE-C key is not the object's;
// wraps cairn.ErrAuth), and from the reader crypt.ErrAuthentication
// (wraps cairn.ErrCorrupt) if stored bytes were changed undetected by the
// shards' checksums: no byte of a segment that fails is returned.
func (c *Client) GetWith(ctx context.Context, bucket, key string, off, length int64, opts GetOptions) (*cairn.Manifest, io.ReadCloser, error) {
	m, err := c.meta.Manifest(ctx, bucket, key)
	if err != nil {
		return nil, nil, err
	}
	return c.OpenWith(ctx, m, off, length, opts)
}

// OpenWith is GetWith of the object version m, a manifest read from the
// metadata store (an object's noncurrent version: meta.Store.ObjectVersion):
// it reads m's shards whether or not m is the current version.
func (c *Client) OpenWith(ctx context.Context, m *cairn.Manifest, off, length int64, opts GetOptions) (*cairn.Manifest, io.ReadCloser, error) {
	bucket, key := m.Bucket, m.Key
	if m.Encryption == nil {
		if opts.CustomerKey != nil {
			return m, nil, fmt.Errorf("%w: a customer key for an object stored without encryption", ErrEncryptionMismatch)
		}
		return c.open(ctx, m, off, length)
	}
	if err := m.Validate(); err != nil { // the encryption's sizes, before they are trusted
		return m, nil, fmt.Errorf("%w: stored manifest: %v", cairn.ErrCorrupt, err)
	}
	size := m.Encryption.Size
	if off < 0 || off > size || (off == size && size > 0 && length != 0) {
		return m, nil, fmt.Errorf("%w: range starts at %d, the object has %d bytes", cairn.ErrInvalid, off, size)
	}
	end := size
	if length >= 0 && off+length < end {
		end = off + length
	}
	dk, err := c.dataKey(ctx, m.Encryption, opts.CustomerKey)
	if err != nil {
		return m, nil, err
	}
	streams, base := []sealedStream{{m: m, version: m.Version, size: m.Size}}, int64(0)
	if len(m.Parts) > 0 {
		// Only the parts the range touches (partSpan), from the first.
		first, last, b, err := partSpan(m.Parts, func(p cairn.Part) (int64, error) { return cairn.DecryptedSize(p.Size) }, off, end)
		if err != nil {
			return m, nil, fmt.Errorf("%w: stored part sizes of %s/%s: %v", cairn.ErrCorrupt, bucket, key, err)
		}
		var at int64 // the stored offset of parts[first] in an exported object
		for _, p := range m.Parts[:first] {
			at += p.Size
		}
		streams, base = streams[:0], b
		for _, p := range m.Parts[first:last] {
			s := sealedStream{m: m.PartManifest(p), version: p.Version, size: p.Size}
			if m.Cold != nil {
				// Exported: the parts' stored bytes are the object's, in order.
				s.m, s.at = m, at
			}
			streams = append(streams, s)
			at += p.Size
		}
	}
	gctx, cancel := context.WithCancel(ctx)
	d := &decryptReader{ctx: gctx, c: c, dk: dk, bucket: bucket, key: key, streams: streams, base: base, off: off, end: end}
	return m, newAheadReader(d, cancel), nil
}

// aheadReader runs a reader (the decryption) on a goroutine of its own,
// aheadDepth chunks of aheadChunk bytes ahead of its caller, so that
// decrypting overlaps with what the caller does with the plaintext (the
// gateway writes it to the network) as decoding already does.
type aheadReader struct {
	src    io.ReadCloser      // owned by the goroutine until done is closed
	cancel context.CancelFunc // ends src's reads (its context)
	ch     chan aheadChunk    // filled chunks, in order; closed by the goroutine
	free   chan []byte        // chunks for the goroutine to fill
	stop   chan struct{}      // closed by Close
	done   chan struct{}      // closed when the goroutine returned
	cur    []byte             // unread bytes of the chunk being read
	buf    []byte             // that chunk's buffer, to give back
	err    error              // sticky, after cur
}

type aheadChunk struct {
	b   []byte
	err error
}

const (
	aheadChunkSize = 256 << 10
	aheadDepth     = 4
)

func newAheadReader(src io.ReadCloser, cancel context.CancelFunc) *aheadReader {
	a := &aheadReader{src: src, cancel: cancel, ch: make(chan aheadChunk, aheadDepth), free: make(chan []byte, aheadDepth+1),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range aheadDepth + 1 {
		a.free <- make([]byte, aheadChunkSize)
	}
	go a.run()
	return a
}

func (a *aheadReader) run() {
	defer close(a.done)
	defer close(a.ch)
	for {
		var buf []byte
		select {
		case buf = <-a.free:
		case <-a.stop:
			return
		}
		n, err := io.ReadFull(a.src, buf)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		select {
		case a.ch <- aheadChunk{buf[:n], err}:
		case <-a.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// next waits until a.cur holds unread bytes, giving read chunks back; it
// returns the sticky error once they are all read.
func (a *aheadReader) next() error {
	for len(a.cur) == 0 {
		if a.buf != nil {
			a.free <- a.buf[:cap(a.buf)]
			a.buf = nil
		}
		if a.err != nil {
			return a.err
		}
		c, ok := <-a.ch
		if !ok {
			a.err = io.ErrClosedPipe
			continue
		}
		a.cur, a.buf, a.err = c.b, c.b, c.err
	}
	return nil
}

func (a *aheadReader) Read(p []byte) (int, error) {
	if err := a.next(); err != nil {
		return 0, err
	}
	n := copy(p, a.cur)
	a.cur = a.cur[n:]
	return n, nil
}

// WriteTo writes the rest of the plaintext to w from the read-ahead's
// chunks, without copying it through a buffer of the caller's (io.Copy
// uses it).
func (a *aheadReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if err := a.next(); err == io.EOF {
			return total, nil
		} else if err != nil {
			return total, err
		}
		n, err := w.Write(a.cur)
		total += int64(n)
		a.cur = a.cur[n:]
		if err != nil {
			return total, err
		}
	}
}

// Close stops the read-ahead and the reads below it.
func (a *aheadReader) Close() error {
	select {
	case <-a.stop:
		return nil // closed before
	default:
	}
	close(a.stop)
	a.cancel()
	<-a.done
	a.cancel()
	return a.src.Close()
}

// sealedStream is one encrypted stream of an object: the object's
// ciphertext, or one part's of an object uploaded in parts. Its size
// stored bytes are those of m from stored offset at: the part's own
// manifest (PartManifest, at 0), or an exported cold object's whole one,
// whose stored bytes are its parts' in order.
type sealedStream struct {
	m       *cairn.Manifest
	version string // the stream's version, in its cipher's nonces
	size    int64  // stored (ciphertext) bytes
	at      int64
}

// decryptReader reads the plaintext range [off, end) of an encrypted
// object's streams (the object, or its parts in order), opening one
// stream's ciphertext range at a time.
type decryptReader struct {
	ctx         context.Context
	c           *Client
	dk          []byte
	bucket, key string
	streams     []sealedStream   // not yet opened, in order
	base        int64            // plaintext offset of streams[0]
	off, end    int64            // the range still to read
	cur         *crypt.Decrypter // the open stream's plaintext
	curS        sealedStream     // the open stream
	curSC       *crypt.StreamCipher
	closer      io.Closer // the open stream's ciphertext reader
	err         error     // sticky
}

func (d *decryptReader) Read(p []byte) (int, error) {
	for {
		if d.err != nil {
			return 0, d.err
		}
		if d.cur != nil {
			n, err := d.cur.Read(p)
			if errors.Is(err, crypt.ErrAuthentication) && n == 0 {
				if d.readAround() {
					continue
				}
			}
			if err == io.EOF {
				d.closeCur()
				err = nil
			}
			if n > 0 || err != nil {
				d.err = err
				return n, err
			}
			continue
		}
		if d.off >= d.end {
			d.err = io.EOF
			continue
		}
		d.err = d.openNext()
	}
}

// openNext opens the next stream that holds bytes of the range.
func (d *decryptReader) openNext() error {
	for len(d.streams) > 0 {
		s := d.streams[0]
		d.streams = d.streams[1:]
		plain, err := cairn.DecryptedSize(s.size)
		if err != nil {
			return fmt.Errorf("%s/%s version %s: %w", d.bucket, d.key, s.version, err)
		}
		lo, hi := d.base, d.base+plain
		d.base = hi
		if hi <= d.off {
			continue
		}
		rg, err := crypt.Range(d.off-lo, min(d.end, hi)-lo, plain)
		if err != nil {
			return err
		}
		d.off = min(d.end, hi)
		sc, err := crypt.NewStreamCipher(d.dk, crypt.Stream{Bucket: d.bucket, Key: d.key, Version: s.version})
		if err != nil {
			return err
		}
		_, rc, err := d.c.open(d.ctx, s.m, s.at+rg.CipherOff, rg.CipherEnd-rg.CipherOff)
		if err != nil {
			return err
		}
		d.cur, d.curS, d.curSC, d.closer = crypt.NewDecrypter(sc, rc, rg), s, sc, rc
		return nil
	}
	return fmt.Errorf("%w: %s/%s: the parts end before the object's size", cairn.ErrCorrupt, d.bucket, d.key)
}

func (d *decryptReader) closeCur() {
	if d.closer != nil {
		d.closer.Close()
	}
	d.cur, d.curS, d.curSC, d.closer = nil, sealedStream{}, nil, nil
}

// readAround handles a segment of the open stream that failed
// authentication: the shards' checksums passed, so some shard holds bytes
// that are not what was written. It reads the rest of the range again
// without each shard slot in turn and keeps the first reading whose next
// segment authenticates, reporting that shard as damaged (OnDamage). It
// returns false if no reading does (a fountain-coded layout is not
// retried): the authentication error stands.
func (d *decryptReader) readAround() bool {
	m := d.curS.m
	if len(m.Shards) < 2 {
		return false // a coded layout, or an exported cold object's
	}
	rg := d.cur.Remaining()
	for i := range m.Shards {
		_, rc, err := d.c.openAvoiding(d.ctx, m, d.curS.at+rg.CipherOff, rg.CipherEnd-rg.CipherOff, i)
		if err != nil {
			continue
		}
		dec := crypt.NewDecrypter(d.curSC, rc, rg)
		if err := dec.Peek(); err != nil {
			rc.Close()
			continue
		}
		d.c.cfg.Logger.Warn("shard decoded into ciphertext that failed authentication; read around it",
			"bucket", m.Bucket, "key", m.Key, "version", m.Version, "shard", i, "disk", m.Shards[i].Disk)
		if f := d.c.cfg.OnDamage; f != nil {
			f(Damage{Bucket: m.Bucket, Key: m.Key, Version: m.Version, Shard: i, Disk: m.Shards[i].Disk,
				Err: fmt.Errorf("%w: the decoded ciphertext failed authentication with this shard", cairn.ErrCorrupt)})
		}
		d.closer.Close()
		d.cur, d.closer = dec, rc
		return true
	}
	return false
}

// Close stops the read.
func (d *decryptReader) Close() error {
	d.closeCur()
	if d.err == nil {
		d.err = io.ErrClosedPipe
	}
	return nil
}
