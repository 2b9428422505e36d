package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"cairn"
)

// Names of the per-disk state series (docs/metrics.md).
const (
	NameDiskCapacity    = "cairn_disk_capacity_bytes"
	NameDiskFree        = "cairn_disk_free_bytes"
	NameDiskHealthy     = "cairn_disk_healthy"
	NameDiskCRCFailures = "cairn_disk_crc_failures_total"
	NameScrubPassBytes  = "cairn_scrub_pass_scanned_bytes"
	NameScrubDamage     = "cairn_scrub_damage_found_total"
	NameScrubOrphans    = "cairn_scrub_orphans_removed_total"
)

// DiskReport is what a node knows of one of its disks when scraped.
type DiskReport struct {
	Disk cairn.DiskID
	// Capacity and Free are the bytes of the file system holding the
	// disk (volume.Usage); UsageOK is false when it could not be read
	// (the directory vanished): they are then not reported.
	Capacity, Free int64
	UsageOK        bool
	// Healthy: the volume is open, has no sticky fault and passed its
	// last check.
	Healthy bool
	// CRCFailures counts reads that found a block, footer or identity
	// corrupt since the volume was opened (volume.Volume.Corruptions).
	CRCFailures int64
	// Scrub is the disk's scrub progress; Scrubbed is false when the disk
	// has no scrubber (its scrub series are then not reported).
	Scrub    cairn.ScrubProgress
	Scrubbed bool
}

// RegisterDisks registers, with reg, the series read from the reports
// disks returns at each scrape: space, health, CRC failures and scrub
// progress per disk. disks is called on the scrape's goroutine and must
// not block on the network.
func RegisterDisks(reg prometheus.Registerer, disks func() []DiskReport) {
	l := []string{"disk"}
	state := &reportCollector[DiskReport]{read: disks, labels: func(r DiskReport) []string { return []string{string(r.Disk)} },
		series: []series[DiskReport]{
			gauge(NameDiskHealthy, "1 if the disk's volume is open, has no sticky fault and passed its last check; else 0.", l,
				func(r DiskReport) float64 { return b2f(r.Healthy) }),
			counter(NameDiskCRCFailures, "Reads that found a block, footer or identity of a shard corrupt (CRC or format) on the disk, since its volume was opened.", l,
				func(r DiskReport) float64 { return float64(r.CRCFailures) }),
		}}
	space := &reportCollector[DiskReport]{labels: state.labels,
		read: func() []DiskReport { return filter(disks(), func(r DiskReport) bool { return r.UsageOK }) },
		series: []series[DiskReport]{
			gauge(NameDiskCapacity, "Size of the file system holding the disk.", l, func(r DiskReport) float64 { return float64(r.Capacity) }),
			gauge(NameDiskFree, "Bytes of the disk's file system an unprivileged writer can still use.", l, func(r DiskReport) float64 { return float64(r.Free) }),
		}}
	scrub := &reportCollector[DiskReport]{labels: state.labels,
		read: func() []DiskReport { return filter(disks(), func(r DiskReport) bool { return r.Scrubbed }) },
		series: []series[DiskReport]{
			gauge(NameScrubPassBytes, "Content bytes of the shards the scrub pass in progress has checked on the disk (0 between passes).", l,
				func(r DiskReport) float64 { return float64(r.Scrub.PassBytes) }),
			gauge("cairn_scrub_pass_shards", "Shards the scrub pass in progress has checked on the disk.", l,
				func(r DiskReport) float64 { return float64(r.Scrub.PassShards) }),
			counter(NameScrubDamage, "Damaged shards scrub found on the disk's volume, all passes.", l,
				func(r DiskReport) float64 { return float64(r.Scrub.Found) }),
			counter(NameScrubOrphans, "Orphan shard files (named by no manifest or upload) scrub removed from the disk's volume, all passes.", l,
				func(r DiskReport) float64 { return float64(r.Scrub.Collected) }),
			gauge("cairn_scrub_last_pass_shards", "Shards the last complete scrub pass checked on the disk.", l,
				func(r DiskReport) float64 { return float64(r.Scrub.LastShards) }),
			gauge("cairn_scrub_last_pass_end_timestamp_seconds", "When the last complete scrub pass of the disk ended (Unix time; 0: never).", l,
				func(r DiskReport) float64 { return unixSeconds(r.Scrub.LastPass) }),
			gauge("cairn_scrub_paused", "1 if scrubbing is paused (cairn admin scrub pause); else 0.", l,
				func(r DiskReport) float64 { return b2f(r.Scrub.Paused) }),
		}}
	reg.MustRegister(state, space, scrub)
}

func filter[R any](rs []R, keep func(R) bool) []R {
	out := rs[:0:0]
	for _, r := range rs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
