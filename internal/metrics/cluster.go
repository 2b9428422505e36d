package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"cairn"
)

// Names of the cluster map series (docs/metrics.md).
const (
	NameClusterDisks     = "cairn_cluster_disks"
	NameClusterDiskState = "cairn_cluster_disk_state"
)

// diskStates are the states a disk can be in, each reported (0 when no
// disk is in it).
var diskStates = []cairn.DiskState{cairn.DiskUp, cairn.DiskSuspect, cairn.DiskDown, cairn.DiskDraining, cairn.DiskOut}

// Cluster holds the series of the cluster map as the director last read
// it: disks by state, and each disk's state.
type Cluster struct {
	count *prometheus.GaugeVec // state
	state *prometheus.GaugeVec // disk, state

	mu sync.Mutex // serializes SetDisks (state is reset and refilled)
}

// NewCluster registers the cluster map series with reg.
func NewCluster(reg prometheus.Registerer) *Cluster {
	c := &Cluster{
		count: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameClusterDisks,
			Help: "Disks of the cluster map by state (up, suspect, down, draining, out), as the director last read it."}, []string{"state"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameClusterDiskState,
			Help: "1 for each disk of the cluster map, labelled with its state, as the director last read it (docs/design/disks.md)."},
			[]string{"disk", "state"}),
	}
	reg.MustRegister(c.count, c.state)
	return c
}

// SetDisks sets the series to the disks of a cluster map.
func (c *Cluster) SetDisks(disks []cairn.Disk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[cairn.DiskState]int{}
	c.state.Reset()
	for _, d := range disks {
		n[d.State]++
		c.state.WithLabelValues(string(d.ID), string(d.State)).Set(1)
	}
	for _, s := range diskStates {
		c.count.WithLabelValues(string(s)).Set(float64(n[s]))
	}
}
