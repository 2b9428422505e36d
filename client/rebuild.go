package client

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"

	"cairn"
)

// FillETags reads every stored byte of m — a manifest that need not be
// committed: one rebuilt from the shards on disks
// (cairn.RebuildManifests) — and sets the ETags S3 gives its content: a
// single-part object's MD5, each part's MD5 and a multipart object's MD5
// of the parts' MD5s with "-N". Reading it whole also proves it decodes.
// An encrypted object's stored bytes are ciphertext, whose ETag is not
// the one its writer recorded: FillETags refuses it (cairn.ErrInvalid).
func (c *Client) FillETags(ctx context.Context, m *cairn.Manifest) error {
	if m.Encryption != nil {
		return fmt.Errorf("%w: %s/%s is encrypted: its ETag is the plaintext's", cairn.ErrInvalid, m.Bucket, m.Key)
	}
	sum := func(pm *cairn.Manifest) ([]byte, error) {
		_, rc, err := c.open(ctx, pm, 0, pm.Size)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		h := md5.New()
		n, err := io.Copy(h, rc)
		if err != nil {
			return nil, err
		}
		if n != pm.Size {
			return nil, fmt.Errorf("%w: %s/%s version %s read back %d bytes of %d", cairn.ErrCorrupt, pm.Bucket, pm.Key, pm.Version, n, pm.Size)
		}
		return h.Sum(nil), nil
	}
	if len(m.Parts) == 0 {
		s, err := sum(m)
		if err != nil {
			return err
		}
		m.ETag = hex.EncodeToString(s)
		return nil
	}
	all := md5.New()
	for i := range m.Parts {
		s, err := sum(m.PartManifest(m.Parts[i]))
		if err != nil {
			return fmt.Errorf("part %d: %w", m.Parts[i].Number, err)
		}
		m.Parts[i].ETag = hex.EncodeToString(s)
		all.Write(s)
	}
	m.ETag = fmt.Sprintf("%s-%d", hex.EncodeToString(all.Sum(nil)), len(m.Parts))
	return nil
}
