package cairn

// Validation of manifests: the rules of docs/design/manifest.md
// ("Validation"), in one place for the metadata store (on commit), the
// client and repair (on read).

import "fmt"

// Validate checks that m describes one object in exactly one form:
//   - m names an object: a bucket, a key ValidateKey accepts, a version, a
//     policy, and a size ≥ 0;
//   - a single-part object has a Layout that Layout.Validate accepts and
//     no parts;
//   - a multipart object has no Layout of its own (the zero Layout) and
//     parts numbered 1..MaxParts in ascending order, with distinct
//     versions, each valid (Part.Validate), all of one form (coded, or
//     shards of one count), whose sizes add up to m's;
//   - a staged cold object (a cold policy, no Cold) has its warm code
//     (Layout.Code), the only field of a multipart one's own Layout,
//     whose parts have shards;
//   - an exported cold object (Cold, with its group and record) has the
//     zero Layout, and its parts, if any, zero layouts, with the other
//     rules of parts;
//   - an encrypted object (Encryption set) names a known scheme and
//     cipher, has a sealed data key (and a key ID for SSE-S3, the key's
//     HMAC and salt for SSE-C), and its plaintext size encrypts to its
//     size (every part's size being an encrypted stream's);
//   - a retention, if any, passes Retention.Check.
//
// What depends on the code (how many shards, how many stripes) is
// ValidateStored's. The error wraps ErrInvalid and says which rule m
// breaks. The metadata store calls Validate on every commit.
func (m *Manifest) Validate() error {
	if why := m.problem(nil); why != "" {
		return m.errorf(ErrInvalid, why)
	}
	if m.Retention != nil {
		if err := m.Retention.Check(); err != nil {
			return fmt.Errorf("manifest %s/%s: %w", m.Bucket, m.Key, err)
		}
	}
	return nil
}

// ValidateStored is Validate for a manifest read back from the metadata
// store by a reader that knows its code: k data blocks (source blocks)
// per stripe and n shard slots per erasure-coded stripe (codec.Params K
// and N()) — of the object's LayoutCode. On top of Validate's rules,
// every layout (the object's, or each part's) must hold the stripes its
// size needs (Manifest.Stripes), the last stripe's blocks big enough for
// the data left for it and no bigger than BlockSize: each shard
// (stripes−1)·BlockSize bytes and a last block of ⌈rest/k⌉..BlockSize
// bytes, or one coded stripe per stripe; and a layout with shards exactly
// n of them.
//
// The store keeps only manifests that passed Validate, so a failure means
// a damaged record or a broken writer, not a bad request: the error wraps
// ErrCorrupt, and not ErrInvalid.
func (m *Manifest) ValidateStored(k, n int) error {
	if why := m.problem(&codeShape{k: k, n: n}); why != "" {
		return m.errorf(ErrCorrupt, "stored manifest: "+why)
	}
	return nil
}

// Validate checks that p can be recorded as a part of a multipart upload:
// its number is 1..MaxParts, it has a version, its size is ≥ 0 and its
// Layout passes Layout.Validate. The error wraps ErrInvalid.
func (p *Part) Validate() error {
	if why := p.problem(); why != "" {
		return fmt.Errorf("%w: part %d: %s", ErrInvalid, p.Number, why)
	}
	return nil
}

// Validate checks that l is exactly one form, and consistent:
//   - shards: no coded stripes; BlockSize > 0; PG ≥ 0; every shard on a
//     disk, all of one positive size; a shard's
//     Row is 0 (its own index) or a spare row ≥ len(Shards) and at most
//     MaxShardIndex, no two shards holding the same row;
//   - coded: no shards; BlockSize > 0; PG 0; every stripe with a version
//     of its own and at least one block; block IDs 0..MaxShardIndex,
//     distinct within a stripe; every block on a disk; a stripe's own
//     block size only on the last stripe, 1..BlockSize;
//   - a code of its own (Code) only with shards.
//
// Whether a Code fits the object (only a single-part object has one) is
// Manifest.Validate's. The zero Layout (a multipart object's own) is neither. The error wraps
// ErrInvalid.
func (l *Layout) Validate() error {
	if why := l.problem(); why != "" {
		return fmt.Errorf("%w: layout: %s", ErrInvalid, why)
	}
	return nil
}

// codeShape is what ValidateStored knows of the object's code.
type codeShape struct {
	k int // data (source) blocks per stripe
	n int // shard slots per erasure-coded stripe
}

// errorf returns an error wrapping sentinel about m.
func (m *Manifest) errorf(sentinel error, why string) error {
	if m == nil {
		return fmt.Errorf("%w: %s", sentinel, why)
	}
	return fmt.Errorf("%w: manifest of %s/%s: %s", sentinel, m.Bucket, m.Key, why)
}

// problem returns the first rule m breaks ("" if none), checking the
// layouts against code if it is not nil.
func (m *Manifest) problem(code *codeShape) string {
	switch {
	case m == nil:
		return "nil manifest"
	case m.Bucket == "":
		return "no bucket"
	case m.Version == "":
		return "no version"
	case m.Policy == "":
		return "no policy"
	case m.Size < 0:
		return fmt.Sprintf("size %d", m.Size)
	}
	if why := keyProblem(m.Key); why != "" {
		return why
	}
	if m.Encryption != nil {
		if why := m.Encryption.problem(m.Size, m.Parts); why != "" {
			return why
		}
	}
	if m.Upload != "" && len(m.Parts) == 0 {
		return "a single-part object names an upload"
	}
	if m.Cold != nil && m.RAIDP != nil {
		return "an object both in a RAIDP group and in the cold tier"
	}
	if m.Cold != nil {
		switch {
		case !m.Layout.zero():
			return "a cold object with a layout of its own"
		case m.Cold.Group == "" || len(m.Cold.Record) == 0:
			return "a cold object without its group or record"
		case !IsColdPolicy(m.Policy):
			return fmt.Sprintf("a cold object of policy %s", m.Policy)
		}
		return m.partsProblem(nil, true)
	}
	if m.Policy == RAIDPPolicy || m.RAIDP != nil {
		return m.raidpProblem()
	}
	own := m.Layout // a multipart object's: zero, but for a staged one's Code
	if IsColdPolicy(m.Policy) {
		if m.Code == "" {
			return "a staged cold object without its warm code (Layout.Code)"
		}
		own.Code = ""
	}
	if len(m.Parts) == 0 {
		if why := m.Layout.problem(); why != "" {
			return why
		}
		return m.Layout.fits(m.Size, code)
	}
	if !own.zero() {
		return "a multipart object has a layout of its own"
	}
	if m.Code != "" && len(m.Parts[0].Coded) > 0 {
		// As a single-part object's: a code of its own only with shards.
		return "a staged cold object with coded parts"
	}
	return m.partsProblem(code, false)
}

// partsProblem is problem for a multipart object's parts (none for a
// single-part cold object). Those of an exported cold object (cold) keep
// their records with the zero Layout; the others' layouts are checked
// against code if it is not nil.
func (m *Manifest) partsProblem(code *codeShape, cold bool) string {
	if len(m.Parts) == 0 {
		return ""
	}
	versions := make(map[string]bool, len(m.Parts))
	var sum int64
	first := &m.Parts[0]
	for i := range m.Parts {
		p := &m.Parts[i]
		why := p.recordProblem()
		switch {
		case why != "":
		case cold && !p.Layout.zero():
			why = "a layout in a cold object"
		case !cold:
			why = p.Layout.problem()
		}
		if why != "" {
			return fmt.Sprintf("part %d: %s", p.Number, why)
		}
		switch {
		case i > 0 && p.Number <= m.Parts[i-1].Number:
			return fmt.Sprintf("part %d after part %d", p.Number, m.Parts[i-1].Number)
		case versions[p.Version]:
			return fmt.Sprintf("part %d: version %s is another part's", p.Number, p.Version)
		case cold:
		case len(p.Coded) > 0 != (len(first.Coded) > 0):
			return fmt.Sprintf("parts %d and %d are of different forms (one coded, one with shards)", first.Number, p.Number)
		case p.Code != "":
			return fmt.Sprintf("part %d has a code of its own (%s); only a single-part object may", p.Number, p.Code)
		case len(p.Shards) != len(first.Shards):
			return fmt.Sprintf("parts %d and %d have %d and %d shards", first.Number, p.Number, len(first.Shards), len(p.Shards))
		}
		if !cold {
			if why := p.fits(p.Size, code); why != "" {
				return fmt.Sprintf("part %d: %s", p.Number, why)
			}
		}
		versions[p.Version] = true
		sum += p.Size
	}
	if sum != m.Size {
		return fmt.Sprintf("size %d, its parts add up to %d", m.Size, sum)
	}
	return ""
}

// problem returns the first rule p breaks ("" if none).
func (p *Part) problem() string {
	if why := p.recordProblem(); why != "" {
		return why
	}
	return p.Layout.problem()
}

// recordProblem is problem without the layout: the number, version and
// size.
func (p *Part) recordProblem() string {
	switch {
	case p.Number < 1 || p.Number > MaxParts:
		return fmt.Sprintf("number outside 1..%d", MaxParts)
	case p.Version == "":
		return "no version"
	case p.Size < 0:
		return fmt.Sprintf("size %d", p.Size)
	}
	return ""
}

// zero reports whether l is the zero Layout.
func (l *Layout) zero() bool {
	return l.Code == "" && l.BlockSize == 0 && l.PG == 0 && len(l.Shards) == 0 && len(l.Coded) == 0
}

// problem returns the first rule l breaks ("" if none).
func (l *Layout) problem() string {
	switch {
	case len(l.Shards) > 0 && len(l.Coded) > 0:
		return "both shards and coded stripes"
	case len(l.Shards) == 0 && len(l.Coded) == 0:
		return "neither shards nor coded stripes"
	case l.BlockSize < 1:
		return fmt.Sprintf("block size %d", l.BlockSize)
	case len(l.Coded) > 0 && l.Code != "":
		return fmt.Sprintf("coded stripes with a code of their own (%s)", l.Code)
	case len(l.Coded) > 0:
		return l.codedProblem()
	}
	if l.PG < 0 {
		return fmt.Sprintf("placement group %d", l.PG)
	}
	if len(l.Shards) > MaxShardIndex+1 {
		return fmt.Sprintf("%d shards, more than shard names allow", len(l.Shards))
	}
	size := l.Shards[0].Size
	if size < 1 {
		return fmt.Sprintf("shard size %d is not positive", size)
	}
	spare := map[int]bool{}
	for i, s := range l.Shards {
		switch {
		case s.Disk == "":
			return fmt.Sprintf("shard %d is on no disk", i)
		case s.Size != size:
			return fmt.Sprintf("shards 0 and %d differ in size (%d, %d)", i, size, s.Size)
		case s.Ident < 0 || s.Ident > MaxIdentityBytes:
			return fmt.Sprintf("shard %d has an identity of %d bytes (0 to %d allowed)", i, s.Ident, MaxIdentityBytes)
		case s.Row == 0:
			continue
		case s.Row < len(l.Shards) || s.Row > MaxShardIndex:
			return fmt.Sprintf("shard %d holds row %d: a spare row is %d..%d", i, s.Row, len(l.Shards), MaxShardIndex)
		case spare[s.Row]:
			return fmt.Sprintf("two shards hold row %d", s.Row)
		}
		spare[s.Row] = true
	}
	return ""
}

// codedProblem is problem for a layout of coded stripes.
func (l *Layout) codedProblem() string {
	if l.PG != 0 {
		return fmt.Sprintf("a coded layout has placement group %d (coded stripes have none)", l.PG)
	}
	versions := make(map[string]bool, len(l.Coded))
	for s, st := range l.Coded {
		switch {
		case st.Version == "":
			return fmt.Sprintf("coded stripe %d has no version", s)
		case versions[st.Version]:
			return fmt.Sprintf("coded stripe %d: version %s is another stripe's", s, st.Version)
		case len(st.Blocks) == 0:
			return fmt.Sprintf("coded stripe %d has no blocks", s)
		case st.BlockSize != 0 && s < len(l.Coded)-1:
			return fmt.Sprintf("coded stripe %d has a block size of its own, but only the last stripe may", s)
		case st.BlockSize < 0 || st.BlockSize > l.BlockSize:
			return fmt.Sprintf("coded stripe %d has blocks of %d bytes, outside 1..%d", s, st.BlockSize, l.BlockSize)
		case st.Next < 0 || st.Next > MaxShardIndex+1:
			return fmt.Sprintf("coded stripe %d: next block ID %d outside 0..%d", s, st.Next, MaxShardIndex+1)
		}
		versions[st.Version] = true
		ids := make(map[int]bool, len(st.Blocks))
		for _, b := range st.Blocks {
			switch {
			case b.ID < 0 || b.ID > MaxShardIndex:
				return fmt.Sprintf("coded stripe %d: block ID %d outside 0..%d", s, b.ID, MaxShardIndex)
			case ids[b.ID]:
				return fmt.Sprintf("coded stripe %d: block %d twice", s, b.ID)
			case st.Next != 0 && b.ID >= st.Next:
				return fmt.Sprintf("coded stripe %d: block %d is not below the next block ID %d", s, b.ID, st.Next)
			case b.Disk == "":
				return fmt.Sprintf("coded stripe %d: block %d is on no disk", s, b.ID)
			case b.Ident < 0 || b.Ident > MaxIdentityBytes:
				return fmt.Sprintf("coded stripe %d: block %d has an identity of %d bytes (0 to %d allowed)", s, b.ID, b.Ident, MaxIdentityBytes)
			}
			ids[b.ID] = true
		}
	}
	return ""
}

// fits returns the first rule l, a valid layout of size bytes, breaks
// against code ("" if none, or if code is nil).
func (l *Layout) fits(size int64, code *codeShape) string {
	if code == nil {
		return ""
	}
	if code.k < 1 || code.n < code.k {
		return fmt.Sprintf("a code of %d data blocks and %d shards", code.k, code.n)
	}
	want := stripes(size, code.k, l.BlockSize)
	// The last stripe's blocks: at least its data ÷ k, at most BlockSize.
	bs := int64(l.BlockSize)
	rest := size - (want-1)*int64(code.k)*bs
	least := max(1, (rest+int64(code.k)-1)/int64(code.k))
	if len(l.Coded) > 0 {
		if int64(len(l.Coded)) != want {
			return fmt.Sprintf("%d coded stripes, want %d (%d bytes in %d-byte blocks)", len(l.Coded), want, size, l.BlockSize)
		}
		if b := l.StripeBlock(size, code.k, want-1); b < least {
			return fmt.Sprintf("the last coded stripe has blocks of %d bytes, want at least %d (%d bytes in %d blocks)", b, least, rest, code.k)
		}
		return ""
	}
	if len(l.Shards) != code.n {
		return fmt.Sprintf("%d shards, the code has %d", len(l.Shards), code.n)
	}
	if got, lo, hi := l.Shards[0].Size, (want-1)*bs+least, want*bs; got < lo || got > hi {
		return fmt.Sprintf("shards of %d bytes, want %d to %d (%d stripes of %d-byte blocks, %d bytes in the last)", got, lo, hi, want, l.BlockSize, rest)
	}
	return ""
}
