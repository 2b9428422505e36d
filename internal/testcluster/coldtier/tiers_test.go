package coldtier_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/testcluster"
	"cairn/internal/testcluster/coldtier"
)

// TestTiersSideBySide runs both tiers in one `cairn server`: objects PUT
// in STANDARD, WARM (raidp) and COLD (single PUTs and an upload in parts)
// in one bucket read back byte-exact in their classes, stored in their
// forms, before and after the export job moves the COLD ones. Then keys
// move between classes by overwrites (WARM → COLD, COLD → WARM, COLD →
// STANDARD, STANDARD → COLD in parts) and read back again after the next
// export: the tiers share the disks without taking each other's bytes.
func TestTiersSideBySide(t *testing.T) {
	ctx := t.Context()
	s, c, store := startStill(t)
	defer func() { store.Close() }()
	type object struct {
		class string // STANDARD, WARM or COLD
		seed  uint64
		size  int64
		parts bool // uploaded in parts of 5 MiB
		moved bool // COLD: exported by the job since its PUT
	}
	objs := map[string]object{}
	seed := uint64(0)
	put := func(key, class string, size int64, parts bool) {
		t.Helper()
		seed++
		o := object{class: class, seed: seed, size: size, parts: parts}
		var err error
		switch {
		case parts && class == "COLD":
			err = putParts(ctx, c, key, seed, size, 5<<20, false, "")
		case parts:
			t.Fatalf("%s: parts only in COLD here", key)
		default:
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
				Body: coldtier.Stream(seed, size), ContentLength: aws.Int64(size), StorageClass: types.StorageClass(class)})
		}
		if err != nil {
			t.Fatalf("put %s in %s (%d bytes): %v", key, class, size, err)
		}
		objs[key] = o
	}
	// check reads every object and checks its class, and that its manifest
	// has its class's form: raidp spans (WARM), a cold group record (COLD,
	// once moved) or a staged cold policy, shards (STANDARD).
	check := func(when string) {
		t.Helper()
		for key, o := range objs {
			if got, n := get(t, c, when, key, ""); got != coldtier.Sum(o.seed, o.size, 0, o.size) || n != o.size {
				t.Fatalf("%s: %s (%s): %d bytes read, %d written, or they differ", when, key, o.class, n, o.size)
			}
			if o.size > 10 {
				off, n := o.size/3, o.size/3
				if got, m := get(t, c, when, key, fmt.Sprintf("bytes=%d-%d", off, off+n-1)); got != coldtier.Sum(o.seed, o.size, off, n) || m != n {
					t.Fatalf("%s: %s (%s): a range differs", when, key, o.class)
				}
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatalf("%s: head %s: %v", when, key, err)
			}
			want := types.StorageClass(o.class)
			if o.class == "STANDARD" {
				want = "" // S3 omits it
			}
			if h.StorageClass != want {
				t.Fatalf("%s: %s: class %q, want %q", when, key, h.StorageClass, want)
			}
			m, err := store.Manifest(ctx, bucket, key)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			switch o.class {
			case "WARM":
				ok = m.RAIDP != nil && m.Cold == nil
			case "COLD":
				ok = cairn.IsColdPolicy(m.Policy) && m.RAIDP == nil && (m.Cold != nil) == o.moved && (len(m.Parts) > 0) == o.parts
			default:
				ok = !cairn.IsColdPolicy(m.Policy) && m.RAIDP == nil && m.Cold == nil && len(m.Shards) > 0
			}
			if !ok {
				t.Fatalf("%s: %s (%s, exported %v): manifest policy %s, raidp %v, cold %v, %d parts, %d shards", when, key, o.class, o.moved,
					m.Policy, m.RAIDP != nil, m.Cold != nil, len(m.Parts), len(m.Shards))
			}
		}
	}
	export := func(when string) {
		t.Helper()
		s.Restart(t) // the export job's first pass runs at once
		c, store = connect(t, s, store)
		testcluster.WaitFor(t, time.Minute, when, func() bool {
			for key, o := range objs {
				m, err := store.Manifest(ctx, bucket, key)
				if err != nil || o.class == "COLD" && m.Cold == nil {
					return false
				}
			}
			return true
		})
		for key, o := range objs {
			o.moved = o.class == "COLD"
			objs[key] = o
		}
	}

	put("std", "STANDARD", 3<<20+11, false)
	put("warm-small", "WARM", 100<<10, false)
	put("warm", "WARM", 1<<20+5, false)
	put("cold", "COLD", 2<<20+3, false)
	put("cold-empty", "COLD", 0, false)
	put("cold-parts", "COLD", 6<<20+7, true)
	check("staged")
	export("the first export")
	check("exported")

	put("warm", "COLD", 1<<20+9, false)
	put("cold", "WARM", 700<<10, false)
	put("cold-parts", "STANDARD", 2<<20, false)
	put("std", "COLD", 5<<20+1, true)
	check("overwritten")
	export("the second export")
	check("exported again")
}
