package etcdmeta

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/internal/retry"
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
// Members (sorted by name), warning about every member that does not answer, a lost or
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
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b MemberInfo) int {
		return cmp.Or(cmp.Compare(orID(a.Name, a.ID), orID(b.Name, b.ID)), cmp.Compare(a.ID, b.ID))
	})
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
	if len(out.Unanswered) > 0 && out.Up == out.Voters {
		warn("every metadata member answers, but endpoints the clients are configured with do not: %s (a removed member's? drop them from the clients' metadata endpoints)",
			strings.Join(out.Unanswered, "; "))
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
	case out.Up == out.Quorum && out.Up == out.Voters:
		warn("the metadata cluster has %d members and writes need all of them: losing one loses its quorum; add a member (docs/meta-members.md)", out.Voters)
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
	list, err := s.memberList(ctx, timeout)
	if err != nil {
		// Without a quorum a linearizable list fails; a serializable one
		// is what the answering member knows.
		if list, err = s.memberList(ctx, timeout, clientv3.WithSerializable()); err != nil {
			return Members{}, err
		}
	}
	return s.judgeMembers(ctx, list, timeout), nil
}

// ProbeMembers is Store.Members for a cluster a Store cannot be opened on
// (it has lost its quorum, so the key layout cannot be read): it connects
// to endpoints with a plain etcd client, closed before it returns.
func ProbeMembers(ctx context.Context, endpoints []string, opts Options, timeout time.Duration) (Members, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: timeout, TLS: opts.TLS, Username: opts.Username, Password: opts.Password,
		Logger: zapLogger(opts.Logger, nil),
	})
	if err != nil {
		return Members{}, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	defer cli.Close()
	s := &Store{cli: cli}
	list, err := s.memberList(ctx, timeout, clientv3.WithSerializable())
	if err != nil {
		return Members{}, err
	}
	return s.judgeMembers(ctx, list, timeout), nil
}

// judgeMembers asks the members of list and the store's endpoints for
// their status and judges the answers (Judge).
func (s *Store) judgeMembers(ctx context.Context, list []MemberInfo, timeout time.Duration) Members {
	endpoints := s.cli.Endpoints()
	for _, m := range list {
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
	return out
}

// AddedMember is what AddMember returns: the new member's ID and the
// --initial-cluster it must start with (with --initial-cluster-state
// existing).
type AddedMember struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	PeerURL        string `json:"peer_url"`
	InitialCluster string `json:"initial_cluster"`
}

// AddMember adds a voting member named name at peerURL to the cluster
// (etcd's member add) and returns how to start it. The cluster counts it
// in its quorum from now on, so it must be started soon. It fails with
// cairn.ErrInvalid if a member already has that name or peer URL, or if
// a member added earlier has not started yet (etcd adds one at a time);
// etcd refuses it if the cluster would lose its quorum.
func (s *Store) AddMember(ctx context.Context, name, peerURL string, timeout time.Duration) (AddedMember, error) {
	list, err := s.memberList(ctx, timeout)
	if err != nil {
		return AddedMember{}, err
	}
	for _, m := range list {
		switch {
		case m.Name == name:
			return AddedMember{}, fmt.Errorf("add metadata member: %w: a member named %s exists (%s)", cairn.ErrInvalid, name, hexID(m.ID))
		case slices.Contains(m.PeerURLs, peerURL):
			return AddedMember{}, fmt.Errorf("add metadata member: %w: member %s already has peer URL %s", cairn.ErrInvalid, orID(m.Name, m.ID), peerURL)
		case m.Name == "":
			return AddedMember{}, fmt.Errorf("add metadata member: %w: member %s was added but has not started; start it (or remove it) first", cairn.ErrInvalid, hexID(m.ID))
		}
	}
	var (
		added   uint64
		members []MemberInfo
		tries   int
	)
	err = changeMembers(ctx, timeout, func(ctx context.Context) error {
		tries++
		resp, err := s.cli.MemberAdd(ctx, []string{peerURL})
		if err == nil {
			added = resp.Member.ID
			members = members[:0]
			for _, m := range resp.Members {
				members = append(members, MemberInfo{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs})
			}
			return nil
		}
		if tries > 1 && errors.Is(err, rpctypes.ErrPeerURLExist) {
			// An earlier attempt was applied, its answer lost (it timed
			// out): the member with the URL, not started, is ours.
			if list, lerr := s.memberList(ctx, timeout); lerr == nil {
				for _, m := range list {
					if m.Name == "" && slices.Contains(m.PeerURLs, peerURL) {
						added, members = m.ID, list
						return nil
					}
				}
			}
		}
		return err
	})
	if err != nil {
		return AddedMember{}, fmt.Errorf("add metadata member %s: %w", name, err)
	}
	var initial []string
	for _, m := range members {
		n := m.Name
		if m.ID == added {
			n = name
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, n+"="+u)
		}
	}
	return AddedMember{ID: hexID(added), Name: name, PeerURL: peerURL, InitialCluster: strings.Join(initial, ",")}, nil
}

// RemoveMember removes the member whose name or hex ID is which (etcd's
// member remove) and returns it as it was listed, and the members left.
// It fails with
// cairn.ErrNotFound if no member matches and with cairn.ErrInvalid for
// the last member; etcd refuses it if the members left could not form a
// quorum.
func (s *Store) RemoveMember(ctx context.Context, which string, timeout time.Duration) (removed MemberInfo, left []MemberInfo, err error) {
	list, err := s.memberList(ctx, timeout)
	if err != nil {
		return MemberInfo{}, nil, err
	}
	var names []string
	for _, m := range list {
		names = append(names, orID(m.Name, m.ID))
		if m.Name != which && hexID(m.ID) != which {
			continue
		}
		if len(list) == 1 {
			return MemberInfo{}, nil, fmt.Errorf("remove metadata member %s: %w: it is the last member", which, cairn.ErrInvalid)
		}
		tries := 0
		err := changeMembers(ctx, timeout, func(ctx context.Context) error {
			tries++
			_, err := s.cli.MemberRemove(ctx, m.ID)
			if tries > 1 && errors.Is(err, rpctypes.ErrMemberNotFound) {
				return nil // an earlier attempt was applied, its answer lost (it timed out)
			}
			return err
		})
		if err != nil {
			return MemberInfo{}, nil, fmt.Errorf("remove metadata member %s: %w", which, err)
		}
		for _, o := range list {
			if o.ID != m.ID {
				left = append(left, o)
			}
		}
		return m, left, nil
	}
	slices.Sort(names)
	return MemberInfo{}, nil, fmt.Errorf("remove metadata member: %w: no member is named %s or has that ID (members: %s)",
		cairn.ErrNotFound, which, strings.Join(names, ", "))
}

// changeMembers runs a membership change, each attempt within timeout,
// retrying while etcd refuses it as unsafe for now (ErrUnhealthy: a
// member left has not been connected to the leader for 5 s, as just
// after a start or an election) or has no leader, for about 10 s. etcd's
// errors that the same change would meet again wrap cairn.ErrInvalid or
// cairn.ErrNotFound.
func changeMembers(ctx context.Context, timeout time.Duration, change func(ctx context.Context) error) error {
	p := retry.Policy{Attempts: 8, Base: 500 * time.Millisecond, Max: 2 * time.Second}
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := change(cctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, rpctypes.ErrMemberNotFound):
			return fmt.Errorf("%w: %w", cairn.ErrNotFound, err)
		case errors.Is(err, rpctypes.ErrPeerURLExist), errors.Is(err, rpctypes.ErrMemberExist),
			errors.Is(err, rpctypes.ErrMemberBadURLs), errors.Is(err, rpctypes.ErrTooManyLearners):
			return fmt.Errorf("%w: %w", cairn.ErrInvalid, err)
		}
		return err
	})
	if errors.Is(err, rpctypes.ErrUnhealthy) {
		return fmt.Errorf("%w (etcd changes members only when those that stay have been connected to the leader for 5 s and form a quorum; 'cairn admin status' shows which are down)", err)
	}
	return err
}

// memberList reads the member list, linearizable unless opts say
// otherwise (a change must start from the current list).
func (s *Store) memberList(ctx context.Context, timeout time.Duration, opts ...clientv3.OpOption) ([]MemberInfo, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.cli.MemberList(lctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	var list []MemberInfo
	for _, m := range resp.Members {
		list = append(list, MemberInfo{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, Learner: m.IsLearner})
	}
	return list, nil
}
