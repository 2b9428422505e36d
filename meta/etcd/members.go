package etcdmeta

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
)

// Members is the metadata cluster as `cairn admin status` shows it
// (docs/design/meta.md, "Members"): every member etcd lists, what each
// answering member reports, the alarms raised, and the warnings Judge
// draws from them.
type Members struct {
	Members []Member `json:"members"`
	Leader  string   `json:"leader,omitempty"` // the leader's name; "" if no answering member knows one
	Voters  int      `json:"voters"`           // members that are not learners
	Up      int      `json:"up"`               // voters that answered
	Quorum  int      `json:"quorum"`           // voters needed for writes: Voters/2 + 1
	Alarms  []string `json:"alarms,omitempty"` // "NOSPACE on meta2"
	// Unanswered are the endpoints asked that did not answer, with why.
	Unanswered []string `json:"unanswered,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Member is one member of the metadata cluster. The raft and database
// fields are what the member itself reported; they are zero if it did not
// answer (Up false).
type Member struct {
	ID         string   `json:"id"` // hex, as etcdctl prints it
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peer_urls"`
	ClientURLs []string `json:"client_urls"`
	Learner    bool     `json:"learner,omitempty"`
	Up         bool     `json:"up"`
	Leader     bool     `json:"leader,omitempty"`
	Endpoint   string   `json:"endpoint,omitempty"` // the endpoint it answered on
	RaftTerm   uint64   `json:"raft_term,omitempty"`
	RaftIndex  uint64   `json:"raft_index,omitempty"`
	// Lag is how many raft entries it is behind the most advanced
	// answering member.
	Lag     uint64   `json:"lag,omitempty"`
	DBSize  int64    `json:"db_size,omitempty"`   // bytes on disk
	DBInUse int64    `json:"db_in_use,omitempty"` // bytes in use (the rest is free pages a defragment returns)
	Version string   `json:"version,omitempty"`
	Errors  []string `json:"errors,omitempty"` // errors the member reports about itself
}

// MemberStatus is what one endpoint answered to a status request: the
// input of Judge, without the etcd types.
type MemberStatus struct {
	Endpoint     string
	Err          error // the endpoint did not answer; the other fields are zero
	ID           uint64
	Leader       uint64 // 0: it knows no leader
	RaftTerm     uint64
	RaftIndex    uint64
	DBSize       int64
	DBInUse      int64
	Version      string
	IsLearner    bool
	MemberErrors []string
}

// MemberInfo is one entry of etcd's member list, the input of Judge.
type MemberInfo struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	Learner    bool
}

// LagWarning is how many raft entries a member may be behind the most
// advanced one before Judge warns: a member this far behind is being
// sent a snapshot or cannot keep up with the write rate.
const LagWarning = 10000

// Judge combines the member list, the status answers and the alarms into
// Members, warning about every member that does not answer, a lost or
// nearly lost quorum, a missing leader, lagging members, alarms and the
// errors members report. It does no I/O.
func Judge(list []MemberInfo, answers []MemberStatus, alarms map[uint64][]string) Members {
	var out Members
	byID := map[uint64]MemberStatus{}
	var maxIndex uint64
	for _, a := range answers {
		if a.Err != nil {
			out.Unanswered = append(out.Unanswered, a.Endpoint+": "+a.Err.Error())
			continue
		}
		if _, dup := byID[a.ID]; !dup {
			byID[a.ID] = a
		}
		maxIndex = max(maxIndex, a.RaftIndex)
	}
	names := map[uint64]string{}
	for _, m := range list {
		names[m.ID] = orID(m.Name, m.ID)
	}
	leaders := map[uint64]bool{}
	for _, m := range list {
		mem := Member{ID: hexID(m.ID), Name: orID(m.Name, m.ID), PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, Learner: m.Learner}
		if !m.Learner {
			out.Voters++
		}
		if a, ok := byID[m.ID]; ok {
			mem.Up, mem.Endpoint = true, a.Endpoint
			mem.RaftTerm, mem.RaftIndex, mem.Lag = a.RaftTerm, a.RaftIndex, maxIndex-a.RaftIndex
			mem.DBSize, mem.DBInUse, mem.Version, mem.Errors = a.DBSize, a.DBInUse, a.Version, a.MemberErrors
			mem.Leader = a.Leader == m.ID
			if a.Leader != 0 {
				leaders[a.Leader] = true
			}
			if !m.Learner {
				out.Up++
			}
		}
		out.Members = append(out.Members, mem)
	}
	out.Quorum = out.Voters/2 + 1
	warn := func(format string, args ...any) { out.Warnings = append(out.Warnings, fmt.Sprintf(format, args...)) }
	for _, m := range out.Members {
		if !m.Up {
			warn("metadata member %s (%s) is down: it does not answer%s", m.Name, m.ID, where(m, answers))
		}
	}
	for id := range leaders {
		if name, ok := names[id]; ok && (out.Leader == "" || name < out.Leader) {
			out.Leader = name
		}
	}
	switch {
	case out.Voters == 0:
	case out.Up < out.Quorum:
		warn("the metadata cluster has lost its quorum: %d of %d members answer, writes need %d", out.Up, out.Voters, out.Quorum)
	case out.Up == out.Quorum && out.Voters == 1:
		warn("the metadata cluster has a single member: losing it stops the cluster (1, 3 or 5 members; docs/meta-members.md)")
	case out.Up == out.Quorum:
		warn("the metadata cluster has %d of %d members up: losing one more loses its quorum (writes need %d); replace the down member (docs/meta-members.md)", out.Up, out.Voters, out.Quorum)
	}
	if len(leaders) > 1 {
		warn("the answering metadata members disagree on the leader (an election is under way)")
	} else if out.Up > 0 && out.Leader == "" {
		warn("no metadata member knows a leader: writes wait for an election")
	}
	for _, m := range out.Members {
		if m.Up && m.Lag > LagWarning {
			warn("metadata member %s is %d raft entries behind", m.Name, m.Lag)
		}
		for _, e := range m.Errors {
			warn("metadata member %s reports: %s", m.Name, e)
		}
	}
	ids := make([]uint64, 0, len(alarms))
	for id := range alarms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		name := names[id]
		if name == "" {
			name = hexID(id)
		}
		for _, a := range alarms[id] {
			out.Alarms = append(out.Alarms, a+" on "+name)
			switch a {
			case "NOSPACE":
				warn("metadata member %s raised NOSPACE: its database is at its quota and the cluster refuses writes until it is compacted, defragmented and the alarm disarmed", name)
			case "CORRUPT":
				warn("metadata member %s raised CORRUPT: its data differs from the others'; replace it (docs/meta-members.md)", name)
			default:
				warn("metadata member %s raised alarm %s", name, a)
			}
		}
	}
	return out
}

// where says which endpoints of a down member did not answer, or that
// none of its client URLs was asked.
func where(m Member, answers []MemberStatus) string {
	var failed []string
	for _, a := range answers {
		if a.Err != nil && slices.Contains(m.ClientURLs, a.Endpoint) {
			failed = append(failed, a.Endpoint+" ("+a.Err.Error()+")")
		}
	}
	if len(failed) > 0 {
		return " at " + strings.Join(failed, ", ")
	}
	return ""
}

func hexID(id uint64) string { return strconv.FormatUint(id, 16) }

// orID is a member's name, or its ID for a member added but not started
// yet (etcd lists it without a name).
func orID(name string, id uint64) string {
	if name == "" {
		return "(unstarted " + hexID(id) + ")"
	}
	return name
}

// Members reads the member list, asks every endpoint the store was
// opened with and every client URL the members advertise (except port 0,
// which a member started on a kernel-picked port advertises) for its
// status, each within timeout and at most 8 at a time, and judges the
// answers (Judge). It fails only if the member list cannot be read.
func (s *Store) Members(ctx context.Context, timeout time.Duration) (Members, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := s.cli.MemberList(lctx)
	cancel()
	if err != nil {
		// Without a quorum a linearizable list fails; a serializable one
		// is what the answering member knows.
		lctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err = s.cli.MemberList(lctx, clientv3.WithSerializable())
		cancel()
		if err != nil {
			return Members{}, fmt.Errorf("etcd member list: %w", err)
		}
	}
	var list []MemberInfo
	endpoints := s.cli.Endpoints()
	for _, m := range resp.Members {
		list = append(list, MemberInfo{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, Learner: m.IsLearner})
		for _, u := range m.ClientURLs {
			if p, err := url.Parse(u); err == nil && p.Port() != "0" && !slices.Contains(endpoints, u) {
				endpoints = append(endpoints, u)
			}
		}
	}
	answers := make([]MemberStatus, len(endpoints))
	var g errgroup.Group
	g.SetLimit(8)
	for i, ep := range endpoints {
		g.Go(func() error {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			answers[i] = MemberStatus{Endpoint: ep}
			st, err := s.cli.Status(sctx, ep)
			if err != nil {
				answers[i].Err = err
				return nil
			}
			answers[i] = MemberStatus{Endpoint: ep, ID: st.Header.MemberId, Leader: st.Leader, RaftTerm: st.RaftTerm,
				RaftIndex: st.RaftIndex, DBSize: st.DbSize, DBInUse: st.DbSizeInUse, Version: st.Version,
				IsLearner: st.IsLearner, MemberErrors: st.Errors}
			return nil
		})
	}
	_ = g.Wait()
	alarms := map[uint64][]string{}
	actx, cancel := context.WithTimeout(ctx, timeout)
	ar, alarmErr := s.cli.AlarmList(actx)
	cancel()
	if alarmErr == nil {
		for _, a := range ar.Alarms {
			alarms[a.MemberID] = append(alarms[a.MemberID], a.Alarm.String())
		}
	}
	out := Judge(list, answers, alarms)
	if alarmErr != nil {
		out.Warnings = append(out.Warnings, "the metadata alarms could not be read: "+alarmErr.Error())
	}
	return out, nil
}
