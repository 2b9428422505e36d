package cairn

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// The check values of the CRC catalogue (the CRC of "123456789"), which
// AWS's CRC64NVME and CRC32/CRC32C are, and the digests of "abc".
func TestChecksumVectors(t *testing.T) {
	tests := []struct {
		alg, in, want string // want: hex
	}{
		{"CRC64NVME", "123456789", "ae8b14860a799888"},
		{"CRC32", "123456789", "cbf43926"},
		{"CRC32C", "123456789", "e3069283"},
		{"SHA1", "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"SHA256", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tc := range tests {
		h, err := NewChecksumHash(tc.alg)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(tc.in))
		if got := hex.EncodeToString(h.Sum(nil)); got != tc.want {
			t.Errorf("%s(%q) = %s, want %s", tc.alg, tc.in, got, tc.want)
		}
	}
	if _, err := NewChecksumHash("MD5"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("MD5: %v", err)
	}
}

func TestCompositeChecksum(t *testing.T) {
	sum := func(v uint32) string {
		return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, v))
	}
	parts := []Part{
		{Number: 1, Checksum: &Checksum{Algorithm: "CRC32", Value: sum(0xcbf43926), Type: ChecksumFullObject}},
		{Number: 3, Checksum: &Checksum{Algorithm: "CRC32", Value: sum(0x12345678), Type: ChecksumFullObject}},
	}
	c, err := CompositeChecksum("CRC32", parts)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := NewChecksumHash("CRC32")
	h.Write([]byte{0xcb, 0xf4, 0x39, 0x26, 0x12, 0x34, 0x56, 0x78})
	if want := base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-2"; c.Value != want || c.Type != ChecksumComposite || c.Algorithm != "CRC32" {
		t.Fatalf("composite %+v, want value %s", c, want)
	}
	for name, ps := range map[string][]Part{
		"a part without":    {parts[0], {Number: 2}},
		"another algorithm": {parts[0], {Number: 2, Checksum: &Checksum{Algorithm: "SHA1", Value: sum(1), Type: ChecksumFullObject}}},
		"a bad value":       {{Number: 1, Checksum: &Checksum{Algorithm: "CRC32", Value: "!!", Type: ChecksumFullObject}}},
	} {
		if _, err := CompositeChecksum("CRC32", ps); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := CompositeChecksum("CRC64NVME", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("CRC64NVME composite: %v", err)
	}
}

// A full-object checksum combined from parts' CRCs is the CRC of the
// whole content, for every CRC and for parts of any size, empty ones
// included.
func TestFullObjectChecksum(t *testing.T) {
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(i*7 + i/13)
	}
	for _, alg := range []string{"CRC32", "CRC32C", "CRC64NVME"} {
		for _, cuts := range [][]int{{0, 10000}, {0, 1, 10000}, {0, 5000, 5000, 9999, 10000}, {0, 3, 700, 4096, 10000}} {
			var parts []Part
			var sizes []int64
			for i := 1; i < len(cuts); i++ {
				h, _ := NewChecksumHash(alg)
				h.Write(data[cuts[i-1]:cuts[i]])
				parts = append(parts, Part{Number: i, Checksum: &Checksum{Algorithm: alg, Type: ChecksumFullObject,
					Value: base64.StdEncoding.EncodeToString(h.Sum(nil))}})
				sizes = append(sizes, int64(cuts[i]-cuts[i-1]))
			}
			got, err := FullObjectChecksum(alg, parts, sizes)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := NewChecksumHash(alg)
			h.Write(data)
			if want := base64.StdEncoding.EncodeToString(h.Sum(nil)); got.Value != want || got.Type != ChecksumFullObject {
				t.Errorf("%s cut at %v: %+v, want %s", alg, cuts, got, want)
			}
		}
	}
	if _, err := FullObjectChecksum("SHA256", nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SHA256: %v", err)
	}
}

// BenchmarkFullObjectChecksum: combining the CRCs of 10,000 parts of
// 5 MiB, what completing the largest upload costs.
func BenchmarkFullObjectChecksum(b *testing.B) {
	for _, alg := range []string{"CRC32C", "CRC64NVME"} {
		b.Run(alg+"/10000parts", func(b *testing.B) {
			h, _ := NewChecksumHash(alg)
			h.Write([]byte("part"))
			c := &Checksum{Algorithm: alg, Value: base64.StdEncoding.EncodeToString(h.Sum(nil)), Type: ChecksumFullObject}
			parts := make([]Part, MaxParts)
			sizes := make([]int64, MaxParts)
			for i := range parts {
				parts[i] = Part{Number: i + 1, Checksum: c}
				sizes[i] = 5 << 20
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FullObjectChecksum(alg, parts, sizes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
