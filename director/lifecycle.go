package director

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"cairn"
	"cairn/lifecycle"
	"cairn/meta"
)

// The lifecycle runner (docs/design/s3.md, "Lifecycle"): a duty of the
// leader that walks every bucket with lifecycle rules, feeds its version
// listing to package lifecycle and applies what is due through the
// store's own delete paths, at a bounded rate, saving its cursor after
// every page so that the next leader resumes where it stopped.

// LifecycleStore is the part of the metadata store the runner uses (see
// meta.Store for each contract).
type LifecycleStore interface {
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
	ListVersions(ctx context.Context, bucket, prefix, keyMarker, afterVersion string, limit int) ([]cairn.ObjectVersion, bool, error)
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	DeleteManifest(ctx context.Context, bucket, key, version string) (*cairn.Manifest, error)
	DeleteVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	PutDeleteMarker(ctx context.Context, bucket, key string, d cairn.DeleteMarker) (cairn.ObjectVersion, error)
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
	DeleteUpload(ctx context.Context, bucket, id string) ([]cairn.Part, error)
	PutLifecycleProgress(ctx context.Context, p cairn.LifecycleProgress) error
	LifecycleProgress(ctx context.Context) (cairn.LifecycleProgress, error)
}

var _ LifecycleStore = meta.Store(nil)

// TransitionFunc moves version v of bucket to storage class class (the
// cold tier's export). It must be idempotent: a pass that is cut off
// repeats the versions of its last page.
type TransitionFunc func(ctx context.Context, bucket string, v cairn.ObjectVersion, class string) error

// LifecycleConfig configures the runner. Zero values take defaults.
type LifecycleConfig struct {
	// Every is how often a pass starts (default 1 hour); a pass cut off
	// resumes at the next run.
	Every time.Duration
	// Rate bounds the actions applied per second (default 100).
	Rate float64
	// Page is the listing page size (default meta.MaxPage).
	Page int
	// DayLength is how long a lifecycle "day" lasts (default 24 h). For
	// tests only: ages are scaled by 24h/DayLength before the rules see
	// them (rule Dates are not scaled).
	DayLength time.Duration
	// ClassOf names the storage class of a policy (default: STANDARD for
	// all), so that a transition is not due for a version already there.
	ClassOf func(policy string) string
	// Transition runs a due transition; nil: transitions are counted as
	// pending, and nothing moves (the cold tier installs the hook).
	Transition TransitionFunc
	// Freed, if set, is told of each object version an expiry removed
	// (its whole manifest): the raidp policy zeroes its bytes
	// (client.FreeRAIDP).
	Freed  func(ctx context.Context, m *cairn.Manifest)
	Logger *slog.Logger
}

// LifecycleRunner is the runner; Run is its duty's body.
type LifecycleRunner struct {
	store LifecycleStore
	cfg   LifecycleConfig
	limit *rate.Limiter
}

// NewLifecycleRunner returns a runner over store.
func NewLifecycleRunner(store LifecycleStore, cfg LifecycleConfig) *LifecycleRunner {
	if cfg.Every <= 0 {
		cfg.Every = time.Hour
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	if cfg.Page <= 0 || cfg.Page > meta.MaxPage {
		cfg.Page = meta.MaxPage
	}
	if cfg.DayLength <= 0 {
		cfg.DayLength = 24 * time.Hour
	}
	if cfg.ClassOf == nil {
		cfg.ClassOf = func(string) string { return "STANDARD" }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &LifecycleRunner{store: store, cfg: cfg, limit: rate.NewLimiter(rate.Limit(cfg.Rate), 1)}
}

// Duty is the runner as a background duty of the leader.
func (l *LifecycleRunner) Duty() Duty {
	return Duty{Name: "apply lifecycle rules", Every: l.cfg.Every, Background: true, Run: l.Run}
}

// scale maps t to the rules' clock: its age at now multiplied by
// 24h/DayLength (identity at the default day length).
func (l *LifecycleRunner) scale(t, now time.Time) time.Time {
	if l.cfg.DayLength == 24*time.Hour || t.IsZero() {
		return t
	}
	f := float64(24*time.Hour) / float64(l.cfg.DayLength)
	age := float64(now.Sub(t)) * f
	const maxAge = float64(100 * 365 * 24 * time.Hour)
	if age > maxAge {
		age = maxAge
	}
	return now.Add(-time.Duration(age))
}

// Run continues the pass under way, or starts one, until it is complete
// or ctx ends; now is the time the rules are evaluated at. A transient
// failure of the store ends the run with the cursor saved; an action the
// store refuses (a locked version, one replaced meanwhile) is counted and
// left.
func (l *LifecycleRunner) Run(ctx context.Context, now time.Time) error {
	p, err := l.store.LifecycleProgress(ctx)
	if err != nil {
		return err
	}
	if p.Started.IsZero() {
		p.Started, p.Bucket, p.After, p.Current = now, "", "", cairn.LifecycleCounts{}
		if err := l.store.PutLifecycleProgress(ctx, p); err != nil {
			return err
		}
	}
	after := ""
	for {
		bs, more, err := l.store.BucketPage(ctx, after, l.cfg.Page)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if b.Name < p.Bucket { // done earlier in this pass
				continue
			}
			if b.Name != p.Bucket {
				p.Bucket, p.After = b.Name, ""
			}
			if len(b.Lifecycle) > 0 {
				if err := l.bucket(ctx, b, &p, now); err != nil {
					_ = l.store.PutLifecycleProgress(context.WithoutCancel(ctx), p)
					return err
				}
			}
		}
		if !more || len(bs) == 0 {
			break
		}
		after = bs[len(bs)-1].Name
	}
	p.Passes++
	p.Finished, p.Started, p.Bucket, p.After = now, time.Time{}, "", ""
	p.Total.Add(p.Current)
	p.Last, p.Current = p.Current, cairn.LifecycleCounts{}
	l.cfg.Logger.Info("lifecycle pass done", "expired", p.Last.Expired, "deleted_versions", p.Last.DeletedVersions,
		"deleted_markers", p.Last.DeletedMarkers, "aborted", p.Last.Aborted, "transitioned", p.Last.Transitioned,
		"transitions_pending", p.Last.TransitionsPending, "refused", p.Last.Refused)
	return l.store.PutLifecycleProgress(ctx, p)
}

// bucket applies the rules of b from p's cursor on: its versions page by
// page, then its uploads.
func (l *LifecycleRunner) bucket(ctx context.Context, b cairn.Bucket, p *cairn.LifecycleProgress, now time.Time) error {
	if p.After == "" {
		p.Current.Buckets++
	}
	tags := lifecycle.NeedsTags(b.Lifecycle)
	var sc lifecycle.Scanner
	key, after := p.After, ""
	for {
		vs, more, err := l.store.ListVersions(ctx, b.Name, "", key, after, l.cfg.Page)
		if errors.Is(err, cairn.ErrNotFound) {
			return nil // the bucket went away
		}
		if err != nil {
			return err
		}
		var objs []lifecycle.Object
		for _, v := range vs {
			if k := sc.Key(); k != "" && v.Key != k {
				p.After = k // every version of the previous key is listed
			}
			objs = append(objs, sc.Add(v, l.cfg.ClassOf(v.Info.Policy))...)
		}
		if !more || len(vs) == 0 {
			objs = append(objs, sc.Flush()...)
		}
		for _, o := range objs {
			if err := l.object(ctx, b, o, tags, p, now); err != nil {
				return err
			}
		}
		if !more || len(vs) == 0 {
			break
		}
		if err := l.store.PutLifecycleProgress(ctx, *p); err != nil {
			return err
		}
		key, after = vs[len(vs)-1].Key, vs[len(vs)-1].Version
	}
	return l.uploads(ctx, b, p, now)
}

// object evaluates and applies the rules for one version.
func (l *LifecycleRunner) object(ctx context.Context, b cairn.Bucket, o lifecycle.Object, tags bool, p *cairn.LifecycleProgress, now time.Time) error {
	p.Current.Versions++
	if tags && !o.Marker && lifecycle.NeedsTagsFor(b.Lifecycle, o.Key) {
		v, err := l.store.ObjectVersion(ctx, b.Name, o.Key, o.ID)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		if v.Manifest != nil {
			o.Tags = v.Manifest.Tags
		}
	}
	o.Created, o.NoncurrentSince = l.scale(o.Created, now), l.scale(o.NoncurrentSince, now)
	for _, a := range lifecycle.Evaluate(b.Lifecycle, o, now) {
		if err := l.apply(ctx, b, o, a, p, now); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one action through the store's delete paths. A refusal
// (anything but a transient failure of the store or the end of ctx) is
// counted and left.
func (l *LifecycleRunner) apply(ctx context.Context, b cairn.Bucket, o lifecycle.Object, a lifecycle.Action, p *cairn.LifecycleProgress, now time.Time) error {
	if err := l.limit.Wait(ctx); err != nil {
		return err
	}
	var err error
	var count *int64
	switch a.Kind {
	case lifecycle.ActExpire:
		count = &p.Current.Expired
		if b.Versioning == "" {
			var m *cairn.Manifest
			if m, err = l.store.DeleteManifest(ctx, b.Name, o.Key, o.Version); err == nil && l.cfg.Freed != nil {
				l.cfg.Freed(ctx, m)
			}
			break
		}
		err = l.expireVersioned(ctx, b, o, now)
	case lifecycle.ActDeleteVersion, lifecycle.ActDeleteMarker:
		count = &p.Current.DeletedVersions
		if a.Kind == lifecycle.ActDeleteMarker {
			count = &p.Current.DeletedMarkers
		}
		var v cairn.ObjectVersion
		if v, err = l.store.DeleteVersion(ctx, b.Name, o.Key, o.ID); err == nil && l.cfg.Freed != nil && v.Manifest != nil {
			l.cfg.Freed(ctx, v.Manifest)
		}
	case lifecycle.ActTransition:
		if l.cfg.Transition == nil {
			p.Current.TransitionsPending++
			return nil
		}
		count = &p.Current.Transitioned
		err = l.cfg.Transition(ctx, b.Name, cairn.ObjectVersion{Key: o.Key, Version: o.Version, Marker: o.Marker, Latest: o.Latest}, a.StorageClass)
	default:
		return fmt.Errorf("lifecycle: unknown action %q", a.Kind)
	}
	switch {
	case err == nil:
		*count++
		l.cfg.Logger.Debug("lifecycle action", "bucket", b.Name, "key", o.Key, "version", o.Version, "action", a.Kind, "rule", a.Rule)
		return nil
	case ctx.Err() != nil || !cairn.IsPermanent(err) && !errors.Is(err, cairn.ErrConflict):
		return err // transient: the next run resumes here
	}
	p.Current.Refused++
	l.cfg.Logger.Info("lifecycle action refused", "bucket", b.Name, "key", o.Key, "version", o.Version, "action", a.Kind, "rule", a.Rule, "err", err)
	return nil
}

// expireVersioned puts a delete marker in front of o, the current
// version of its key in a bucket whose versioning was ever set (a null
// marker under Suspended), unless another version became current since
// the listing (ErrConflict: left for the next pass). The check and the
// marker are two calls: a write in between is hidden by the marker, as a
// DeleteObject racing it would hide it.
func (l *LifecycleRunner) expireVersioned(ctx context.Context, b cairn.Bucket, o lifecycle.Object, now time.Time) error {
	cur, err := l.store.ObjectVersion(ctx, b.Name, o.Key, "")
	if err != nil {
		return err
	}
	if cur.Marker || cur.Version != o.Version {
		return fmt.Errorf("lifecycle: %s/%s changed since it was listed: %w", b.Name, o.Key, cairn.ErrConflict)
	}
	ver, err := cairn.NewVersion(now, rand.Reader)
	if err != nil {
		return err
	}
	_, err = l.store.PutDeleteMarker(ctx, b.Name, o.Key, cairn.DeleteMarker{Version: ver,
		Versioned: b.Versioning == cairn.VersioningEnabled, Created: now.UTC()})
	return err
}

// uploads aborts the bucket's multipart uploads whose time is up.
func (l *LifecycleRunner) uploads(ctx context.Context, b cairn.Bucket, p *cairn.LifecycleProgress, now time.Time) error {
	after := ""
	for {
		us, more, err := l.store.UploadPage(ctx, b.Name, after, l.cfg.Page)
		if err != nil {
			return err
		}
		for _, u := range us {
			for range lifecycle.EvaluateUpload(b.Lifecycle, u.Key, u.ID, l.scale(u.Created, now), now) {
				if err := l.limit.Wait(ctx); err != nil {
					return err
				}
				_, err := l.store.DeleteUpload(ctx, b.Name, u.ID)
				switch {
				case err == nil:
					p.Current.Aborted++
				case errors.Is(err, cairn.ErrNotFound):
				default:
					return err
				}
			}
		}
		if !more || len(us) == 0 {
			return nil
		}
		after = meta.UploadPosition(us[len(us)-1])
	}
}
