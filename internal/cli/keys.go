package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"

	"cairn"
	"cairn/crypt"
	"cairn/internal/cmdline"
)

func runAdminKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin keys", "Manage the SSE-S3 master keys (docs/design/encryption.md, \"Key rotation\").", []cmdline.Command{
		{Name: "rotate", Summary: "add a fresh master key to the key file and make it current", Run: runKeysRotate},
		{Name: "reseal", Summary: "re-seal every SSE-S3 data key with the current master key (no data is rewritten)", Run: runKeysReseal},
	}, args, stdout, stderr)
}

func runKeysRotate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin keys rotate", flag.ContinueOnError)
	file := fs.String("kms-key-file", "", kmsKeyFileHelp+" (required)")
	cmdline.Usage(fs, "cairn admin keys rotate --kms-key-file FILE",
		"Adds a fresh master key to FILE and makes it current: new objects are sealed with it, old ones still\n"+
			"open with their keys. Give every gateway the new file (then SIGHUP or restart them), then run 'cairn admin keys reseal'.")
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	if *file == "" || fs.NArg() != 0 {
		return fmt.Errorf("%w: cairn admin keys rotate takes --kms-key-file and no arguments", ErrUsage)
	}
	k, err := loadKeyring(*file)
	if err != nil {
		return err
	}
	n, err := k.Rotate(rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKeyring(*file, n, false); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "master key %s is current in %s (keys: %v)\n", n.Current(), *file, n.IDs())
	return nil
}

func runKeysReseal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin keys reseal", flag.ContinueOnError)
	file := fs.String("kms-key-file", "", kmsKeyFileHelp+" (required)")
	cmdline.Usage(fs, "cairn admin keys reseal --config CLIENT.CONF --kms-key-file FILE",
		"Walks every multipart upload in progress and every object and re-seals the data key of each SSE-S3\n"+
			"one sealed by another master key than FILE's current one (compare-and-swap on its record; no data is\n"+
			"rewritten). A key can leave the file once this reports no object and no upload under it.")
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if *file == "" {
			return fmt.Errorf("%w: --kms-key-file is required", ErrUsage)
		}
		k, err := loadKeyring(*file)
		if err != nil {
			return err
		}
		st, err := reseal(ctx, cl.meta, k)
		fmt.Fprintf(stdout, "%d SSE-S3 objects, %d re-sealed with master key %s, %d skipped (changed meanwhile)\n",
			st.objects, st.resealed, k.Current(), st.skipped)
		fmt.Fprintf(stdout, "%d SSE-S3 uploads in progress, %d re-sealed, %d skipped (completed or aborted meanwhile)\n",
			st.uploads, st.uploadsResealed, st.uploadsSkipped)
		return err
	})
}

// manifestLister is what walking every object needs of the metadata
// store (meta.Store).
type manifestLister interface {
	Buckets(ctx context.Context) ([]cairn.Bucket, error)
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error)
	ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error)
}

// eachManifest calls fn with every object's manifest, bucket by bucket in
// key order, a page at a time, and then with the bucket's noncurrent
// versions (docs/design/versioning.md); fn's error stops the walk and is
// returned.
func eachManifest(ctx context.Context, st manifestLister, fn func(m *cairn.Manifest) error) error {
	buckets, err := st.Buckets(ctx)
	if err != nil {
		return err
	}
	for _, b := range buckets {
		after := ""
		for {
			ms, more, err := st.ListManifests(ctx, b.Name, "", after, 1000)
			if err != nil {
				return err
			}
			for _, m := range ms {
				after = m.Key
				if err := fn(m); err != nil {
					return err
				}
			}
			if !more || len(ms) == 0 {
				break
			}
		}
		if b.Versioning == "" {
			continue
		}
		afterKey, afterVersion := "", ""
		for {
			ms, more, err := st.ListVersionManifests(ctx, b.Name, afterKey, afterVersion, 1000)
			if err != nil {
				return err
			}
			for _, m := range ms {
				afterKey, afterVersion = m.Key, m.Version
				if err := fn(m); err != nil {
					return err
				}
			}
			if !more || len(ms) == 0 {
				break
			}
		}
	}
	return nil
}

// resealStore is what reseal needs of the metadata store (meta.Store).
type resealStore interface {
	manifestLister
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	Uploads(ctx context.Context, bucket string) ([]cairn.Upload, error)
	UpdateUploadEncryption(ctx context.Context, bucket, id string, e, prev *cairn.Encryption) error
}

type resealStats struct {
	objects, resealed, skipped               int
	uploads, uploadsResealed, uploadsSkipped int
}

// resealed returns e's data key sealed by k's current master key, or nil
// if it already is.
func resealed(ctx context.Context, k *crypt.Keyring, e *cairn.Encryption) (*cairn.Encryption, error) {
	if e.KeyID == k.Current() {
		return nil, nil
	}
	dk, err := k.Unseal(ctx, e.KeyID, e.SealedKey)
	if err != nil {
		return nil, err
	}
	ne := *e
	if ne.KeyID, ne.SealedKey, err = k.Seal(ctx, dk, rand.Reader); err != nil {
		return nil, err
	}
	return &ne, nil
}

// reseal re-seals the data key of every SSE-S3 object, and of every
// SSE-S3 multipart upload in progress, whose master key is not k's
// current one. An object overwritten or deleted meanwhile is skipped (its
// new version, if any, was sealed with whatever key its writer had); so
// is an upload completed or aborted meanwhile: the object it became is
// visited by a later reseal, uploads first so that an upload completed
// during this walk is an object of the walk below.
func reseal(ctx context.Context, st resealStore, k *crypt.Keyring) (resealStats, error) {
	var out resealStats
	us, err := st.Uploads(ctx, "")
	if err != nil {
		return out, err
	}
	for _, u := range us {
		if u.Encryption == nil || u.Encryption.Scheme != cairn.SSES3 {
			continue
		}
		out.uploads++
		ne, err := resealed(ctx, k, u.Encryption)
		if err != nil {
			return out, fmt.Errorf("upload %s of %s/%s: %w", u.ID, u.Bucket, u.Key, err)
		}
		if ne == nil {
			continue
		}
		switch err := st.UpdateUploadEncryption(ctx, u.Bucket, u.ID, ne, u.Encryption); {
		case errors.Is(err, cairn.ErrConflict), errors.Is(err, cairn.ErrNotFound):
			out.uploadsSkipped++
		case err != nil:
			return out, fmt.Errorf("upload %s of %s/%s: %w", u.ID, u.Bucket, u.Key, err)
		default:
			out.uploadsResealed++
		}
	}
	err = eachManifest(ctx, st, func(m *cairn.Manifest) error {
		e := m.Encryption
		if e == nil || e.Scheme != cairn.SSES3 {
			return nil
		}
		out.objects++
		ne, err := resealed(ctx, k, e)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", m.Bucket, m.Key, err)
		}
		if ne == nil {
			return nil
		}
		next := *m
		next.Encryption = ne
		switch err := st.UpdateManifest(ctx, &next, m); {
		case errors.Is(err, cairn.ErrConflict), errors.Is(err, cairn.ErrNotFound):
			out.skipped++
		case err != nil:
			return fmt.Errorf("%s/%s: %w", m.Bucket, m.Key, err)
		default:
			out.resealed++
		}
		return nil
	})
	return out, err
}
