package cli

import (
	"flag"
	"fmt"
	"time"

	"cairn/internal/units"
	"cairn/node/scrub"
)

// scrubOptions are a node's scrub flags (docs/design/scrub.md).
type scrubOptions struct {
	rate     *string
	share    *float64
	interval *time.Duration
	off      *bool
	grace    *time.Duration

	cfg scrub.Config // filled by validate
}

func scrubFlags(fs *flag.FlagSet) *scrubOptions {
	return &scrubOptions{
		rate: fs.String("scrub-rate", "16MiB", "this node: most bytes per second each disk's scrubber reads to verify its shards"),
		share: fs.Float64("scrub-share", scrub.DefaultShare,
			"this node: most of a disk's time the scrubber takes while the node serves requests, in (0, 1]"),
		interval: fs.Duration("scrub-interval", scrub.DefaultInterval, "this node: time from the end of one full scrub pass of a disk to the start of the next"),
		off:      fs.Bool("no-scrub", false, "this node: do not scrub (verify every shard in the background)"),
		grace: fs.Duration("gc-grace", scrub.DefaultOrphanGrace,
			"this node: age after which scrub removes a shard file that no committed manifest or upload names (0: never remove, only count)"),
	}
}

func (o *scrubOptions) validate() error {
	rate, err := units.ParseSize(*o.rate)
	if err != nil || rate <= 0 {
		return fmt.Errorf("%w: --scrub-rate: want a positive size per second, e.g. 16MiB", ErrUsage)
	}
	if !(*o.share > 0 && *o.share <= 1) {
		return fmt.Errorf("%w: --scrub-share: want a fraction in (0, 1], e.g. 0.1", ErrUsage)
	}
	if *o.interval <= 0 {
		return fmt.Errorf("%w: --scrub-interval must be positive", ErrUsage)
	}
	if *o.grace < 0 {
		return fmt.Errorf("%w: --gc-grace must not be negative (0: never remove orphans)", ErrUsage)
	}
	grace := *o.grace
	if grace == 0 {
		grace = -1 // scrub.Config: negative counts orphans, never removes them
	}
	o.cfg = scrub.Config{Rate: rate, Share: *o.share, Interval: *o.interval, OrphanGrace: grace}
	return nil
}
