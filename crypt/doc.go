// Package crypt is cairn's encryption at rest: a pure core that seals and
// opens the segments of an object's stream and seals its data key
// (docs/design/encryption.md). It does no I/O of its own (it wraps the
// io.Readers it is given) and takes its randomness as an io.Reader.
//
// Vocabulary:
//
//   - data key: 32 random bytes per object (shared by a multipart
//     object's parts); never stored in the clear.
//   - master key: a key-encryption key of the cluster's Keyring (SSE-S3),
//     named by an ID; or the customer's key (SSE-C). Sealing a data key is
//     AES-256-GCM under the master key with a random nonce (Seal, Unseal).
//   - stream: the bytes of one object version or one part version,
//     identified by bucket, key and version (Stream). Each stream has its
//     own AES-256-GCM key, derived with HKDF-SHA256 from the data key and
//     the version, so nonces (the segment index) never repeat under a key.
//   - segment: cairn.SegmentSize bytes of plaintext (the last one shorter,
//     an empty stream one empty segment), sealed on its own with its
//     index, its stream's identity and a final flag in the additional
//     data: segments cannot be reordered, swapped between objects or cut
//     off at the end without an authentication failure (ErrAuthentication).
//
// A ranged read decrypts only the segments it touches: Range maps a
// plaintext range to the ciphertext range that holds it; NewDecrypter
// reads that ciphertext and yields the plaintext range.
//
// Usage sketch:
//
//	dk, _ := crypt.NewDataKey(rand.Reader)
//	sc, _ := crypt.NewStreamCipher(dk, crypt.Stream{Bucket: b, Key: k, Version: v})
//	ct := crypt.NewEncrypter(sc, plaintext)            // an io.Reader of ciphertext
//	r := crypt.Range(off, end, size)                   // for a GET of [off, end)
//	pt := crypt.NewDecrypter(sc, ciphertextAt(r.CipherOff), r, size)
//
// Caveats: a stream key is only unique as long as a version is never
// written twice under the same data key; cairn's versions are fresh random
// IDs per write. The keyring is in memory; the key file that holds it is
// as secret as the data (internal/cli keeps it 0600).
package crypt
