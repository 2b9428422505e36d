package crypt

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"cairn"
)

// Keyring holds the cluster's master keys for SSE-S3: several, each named
// by an ID, one of them current (it seals new data keys; the others only
// unseal, until rotation re-sealed every data key they sealed). Its
// methods are safe for concurrent use; a Keyring is not changed after it
// is parsed or built (Rotate returns a new one).
type Keyring struct {
	current string
	keys    map[string][]byte
}

// keyFile is the key file's JSON format (docs/design/encryption.md, "Key
// file"); it serves only as documentation and for (un)marshalling.
type keyFile struct {
	Current string            `json:"current"` // ID of the key that seals new data keys
	Keys    map[string]string `json:"keys"`    // ID → base64 (standard) of KeySize bytes
}

// ErrUnknownKey: a sealed key names a master key ID the keyring does not
// hold. Wraps cairn.ErrCorrupt (permanent: the key file lacks it).
var ErrUnknownKey = fmt.Errorf("%w: unknown master key", cairn.ErrCorrupt)

// NewKeyring returns a keyring with one fresh key from rand.
func NewKeyring(rand io.Reader) (*Keyring, error) {
	return (&Keyring{keys: map[string][]byte{}}).Rotate(rand)
}

// Rotate returns a copy of k with a fresh key (random ID and bytes from
// rand) made current.
func (k *Keyring) Rotate(rand io.Reader) (*Keyring, error) {
	var id [4]byte
	key := make([]byte, KeySize)
	if _, err := io.ReadFull(rand, id[:]); err != nil {
		return nil, fmt.Errorf("drawing a key ID: %w", err)
	}
	if _, err := io.ReadFull(rand, key); err != nil {
		return nil, fmt.Errorf("drawing a master key: %w", err)
	}
	n := &Keyring{current: hex.EncodeToString(id[:]), keys: make(map[string][]byte, len(k.keys)+1)}
	for i, v := range k.keys {
		n.keys[i] = v
	}
	if _, dup := n.keys[n.current]; dup {
		return nil, fmt.Errorf("%w: key ID %s drawn twice", cairn.ErrInvalid, n.current)
	}
	n.keys[n.current] = key
	return n, nil
}

// ParseKeyring parses a key file (Marshal's format). Errors wrap
// cairn.ErrInvalid and say what is wrong.
func ParseKeyring(b []byte) (*Keyring, error) {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: key file: %v", cairn.ErrInvalid, err)
	}
	k := &Keyring{current: f.Current, keys: make(map[string][]byte, len(f.Keys))}
	for id, v := range f.Keys {
		if id == "" || strings.ContainsAny(id, " \t\n/") {
			return nil, fmt.Errorf("%w: key file: key ID %q", cairn.ErrInvalid, id)
		}
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("%w: key file: key %s is not %d bytes in base64", cairn.ErrInvalid, id, KeySize)
		}
		k.keys[id] = key
	}
	if _, ok := k.keys[k.current]; !ok {
		return nil, fmt.Errorf("%w: key file: current key %q is not among its keys", cairn.ErrInvalid, k.current)
	}
	return k, nil
}

// Marshal returns the key file of k.
func (k *Keyring) Marshal() []byte {
	f := keyFile{Current: k.current, Keys: make(map[string]string, len(k.keys))}
	for id, v := range k.keys {
		f.Keys[id] = base64.StdEncoding.EncodeToString(v)
	}
	b, _ := json.MarshalIndent(f, "", "  ") // strings only: cannot fail
	return append(b, '\n')
}

// Current returns the ID of the key that seals new data keys.
func (k *Keyring) Current() string { return k.current }

// IDs returns the IDs of k's keys, sorted.
func (k *Keyring) IDs() []string {
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Seal seals dataKey with the current master key and returns its ID. ctx
// is unused (a remote key service needs one).
func (k *Keyring) Seal(_ context.Context, dataKey []byte, rand io.Reader) (string, []byte, error) {
	s, err := Seal(k.keys[k.current], dataKey, cairn.SSES3+"\x00"+k.current, rand)
	return k.current, s, err
}

// Unseal opens a data key sealed by the master key keyID: ErrUnknownKey if
// k has no such key, ErrAuthentication if the sealed bytes do not open.
func (k *Keyring) Unseal(_ context.Context, keyID string, sealed []byte) ([]byte, error) {
	kek, ok := k.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, keyID)
	}
	return Unseal(kek, sealed, cairn.SSES3+"\x00"+keyID)
}

// ErrWrongKey: an SSE-C request's key is not the one the object was
// written with. Wraps cairn.ErrAuth (S3 answers 403 AccessDenied).
var ErrWrongKey = fmt.Errorf("%w: the customer key does not match the object's", cairn.ErrAuth)

// CustomerKeyHMAC returns HMAC-SHA256(salt, key): what an SSE-C object
// keeps to tell the right customer key from a wrong one.
func CustomerKeyHMAC(key, salt []byte) []byte {
	h := hmac.New(sha256.New, salt)
	h.Write(key)
	return h.Sum(nil)
}

// customerLabel is the label an SSE-C data key is sealed with.
const customerLabel = cairn.SSEC

// SealCustomer seals dataKey with a customer key and returns the sealed
// key, a fresh salt and the key's HMAC (cairn.Encryption's SSE-C fields).
func SealCustomer(key, dataKey []byte, rand io.Reader) (sealed, salt, mac []byte, err error) {
	if len(key) != KeySize {
		return nil, nil, nil, ErrKeySize
	}
	salt = make([]byte, 16)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return nil, nil, nil, fmt.Errorf("drawing a salt: %w", err)
	}
	sealed, err = Seal(key, dataKey, customerLabel, rand)
	if err != nil {
		return nil, nil, nil, err
	}
	return sealed, salt, CustomerKeyHMAC(key, salt), nil
}

// UnsealCustomer checks a customer key against the HMAC e keeps and opens
// e's data key with it: ErrWrongKey if it is not the object's key.
func UnsealCustomer(key []byte, e *cairn.Encryption) ([]byte, error) {
	if len(key) != KeySize {
		return nil, ErrKeySize
	}
	if !hmac.Equal(CustomerKeyHMAC(key, e.KeySalt), e.KeyHMAC) {
		return nil, ErrWrongKey
	}
	return Unseal(key, e.SealedKey, customerLabel)
}
