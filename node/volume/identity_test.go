package volume

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"cairn"
	"cairn/internal/vfs"
)

// TestIdentityRoundTrip: a shard written with an identity gives it back
// byte for byte through Identity; one written without has none; both
// read back their content.
func TestIdentityRoundTrip(t *testing.T) {
	mem := vfs.NewMem()
	v := openTest(t, mem, "/d")
	ctx := context.Background()
	with, without := shardName(1, 4), shardName(2, 0)
	data := []byte("some content of a shard")
	info := mustPut(t, v, with, data)
	mustPutV1(t, v, without, data)

	id, got, ok, err := v.Identity(ctx, with)
	want, _ := cairn.DecodeIdentity(identFor(t, with))
	if err != nil || !ok || id != want || got != info {
		t.Fatalf("identity of %s: %+v %+v %v %v, want %+v %+v", with, id, got, ok, err, want, info)
	}
	if _, _, ok, err := v.Identity(ctx, without); err != nil || ok {
		t.Fatalf("identity of a format 1 shard: ok=%v %v", ok, err)
	}
	// The bytes on disk: content and block CRC, identity, footer of
	// format 2 whose flags hold the identity's length.
	var raw []byte
	rewrite(t, mem, v.shardPath(with), func(b []byte) []byte { raw = bytes.Clone(b); return b })
	ident := identFor(t, with)
	foot := raw[len(raw)-footerSize:]
	switch {
	case !bytes.Equal(raw[:len(data)], data):
		t.Fatal("content is not first")
	case !bytes.Equal(raw[len(data)+crcSize:len(raw)-footerSize], ident):
		t.Fatal("the identity is not between the blocks and the footer")
	case binary.LittleEndian.Uint16(foot[8:]) != ShardFormat || int(binary.LittleEndian.Uint16(foot[10:])) != len(ident):
		t.Fatalf("footer format %d flags %d", binary.LittleEndian.Uint16(foot[8:]), binary.LittleEndian.Uint16(foot[10:]))
	}
}

// TestPutRefusesBadIdentity: an identity that does not decode or names
// another shard file is refused before anything is written.
func TestPutRefusesBadIdentity(t *testing.T) {
	v := openTest(t, vfs.NewMem(), "/d")
	ctx := context.Background()
	name := shardName(3, 1)
	for _, c := range []struct {
		what  string
		ident []byte
	}{
		{"another row", identFor(t, shardName(3, 2))},
		{"another version", identFor(t, shardName(4, 1))},
		{"garbage", []byte("not an identity")},
		{"empty", []byte{}},
		{"flipped bit", func() []byte { b := identFor(t, name); b[3] ^= 1; return b }()},
	} {
		if _, err := v.PutIdentified(ctx, name, c.ident, bytes.NewReader([]byte("x"))); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.what, err)
		}
	}
	if _, err := v.Stat(ctx, name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a refused put left a shard: %v", err)
	}
}
