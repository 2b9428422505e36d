package crypt

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"io"
)

// Sealed S3 secret keys (docs/design/meta.md, "Users"). The metadata
// store keeps each user's secret key, which SigV4 needs in the clear to
// verify a signature, sealed under a key derived from the cluster secret.

// secretInfo is the HKDF info of the users' sealing key and the start of
// a sealed secret's additional data.
const secretInfo = "cairn s3 user secret v1\x00"

// UserSealKey derives the key that seals S3 users' secret keys from the
// cluster secret (HKDF-SHA256): every gateway and CLI holding the cluster
// secret derives the same one.
func UserSealKey(clusterSecret string) ([]byte, error) {
	if clusterSecret == "" {
		return nil, fmt.Errorf("%w: empty cluster secret", ErrKeySize)
	}
	return hkdf.Key(sha256.New, []byte(clusterSecret), nil, secretInfo, KeySize)
}

// secretLabel binds a sealed secret to its user and access key.
func secretLabel(user, accessKey string) []byte {
	return []byte(secretInfo + user + "\x00" + accessKey)
}

// SealSecret seals an S3 secret key of user's accessKey under key
// (UserSealKey) with a fresh nonce from rand: nonce ‖ ciphertext ‖ tag.
func SealSecret(key []byte, user, accessKey, secret string, rand io.Reader) ([]byte, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, fmt.Errorf("drawing a nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, []byte(secret), secretLabel(user, accessKey)), nil
}

// OpenSecret opens what SealSecret made: ErrAuthentication if key is not
// the one that sealed it (another cluster secret), the bytes changed, or
// they were sealed for another user or access key.
func OpenSecret(key, sealed []byte, user, accessKey string) (string, error) {
	aead, err := newGCM(key)
	if err != nil {
		return "", err
	}
	ns := aead.NonceSize()
	if len(sealed) < ns+aead.Overhead() {
		return "", fmt.Errorf("sealed secret of %d bytes: %w", len(sealed), ErrAuthentication)
	}
	b, err := aead.Open(nil, sealed[:ns], sealed[ns:], secretLabel(user, accessKey))
	if err != nil {
		return "", fmt.Errorf("opening the secret key of %s: %w", user, ErrAuthentication)
	}
	return string(b), nil
}
