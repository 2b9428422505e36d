package etcdmeta_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	etcdmeta "cairn/meta/etcd"
)

func TestJudgeMembers(t *testing.T) {
	three := []etcdmeta.MemberInfo{
		{ID: 0xa, Name: "m1", ClientURLs: []string{"http://h1:2379"}},
		{ID: 0xb, Name: "m2", ClientURLs: []string{"http://h2:2379"}},
		{ID: 0xc, Name: "m3", ClientURLs: []string{"http://h3:2379"}},
	}
	up := func(ep string, id, leader, index uint64) etcdmeta.MemberStatus {
		return etcdmeta.MemberStatus{Endpoint: ep, ID: id, Leader: leader, RaftTerm: 2, RaftIndex: index, DBSize: 1 << 20}
	}
	down := func(ep string) etcdmeta.MemberStatus {
		return etcdmeta.MemberStatus{Endpoint: ep, Err: errors.New("context deadline exceeded")}
	}
	tests := []struct {
		name    string
		list    []etcdmeta.MemberInfo
		answers []etcdmeta.MemberStatus
		alarms  map[uint64][]string
		leader  string
		up      int
		quorum  int
		lag     map[string]uint64
		warn    []string // each a substring of one warning, in order; nil: no warnings
	}{
		{name: "healthy", list: three, answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xb, 100),
			up("http://h2:2379", 0xb, 0xb, 100), up("http://h3:2379", 0xc, 0xb, 98)},
			leader: "m2", up: 3, quorum: 2, lag: map[string]uint64{"m1": 0, "m2": 0, "m3": 2}},
		{name: "one down", list: three, answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xa, 100),
			down("http://h2:2379"), up("http://h3:2379", 0xc, 0xa, 100)},
			leader: "m1", up: 2, quorum: 2, warn: []string{
				"metadata member m2 (b) is down: it does not answer at http://h2:2379 (context deadline exceeded)",
				"2 of 3 members up: losing one more loses its quorum (writes need 2)"}},
		{name: "endpoint not asked", list: three, answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xa, 100),
			up("http://h3:2379", 0xc, 0xa, 100)},
			leader: "m1", up: 2, quorum: 2, warn: []string{"metadata member m2 (b) is down: it does not answer", "losing one more"}},
		{name: "quorum lost", list: three, answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0, 100),
			down("http://h2:2379"), down("http://h3:2379")},
			up: 1, quorum: 2, warn: []string{"m2 (b) is down", "m3 (c) is down", "lost its quorum: 1 of 3 members answer, writes need 2",
				"no metadata member knows a leader"}},
		{name: "single", list: three[:1], answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xa, 7)},
			leader: "m1", up: 1, quorum: 1, warn: []string{"single member"}},
		{name: "five, two down", list: append(slices.Clone(three), etcdmeta.MemberInfo{ID: 0xd, Name: "m4"}, etcdmeta.MemberInfo{ID: 0xe, Name: "m5"}),
			answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xa, 100), up("http://h2:2379", 0xb, 0xa, 100), up("http://h3:2379", 0xc, 0xa, 100)},
			leader:  "m1", up: 3, quorum: 3, warn: []string{"m4 (d) is down", "m5 (e) is down", "3 of 5 members up: losing one more"}},
		{name: "five, one down", list: append(slices.Clone(three), etcdmeta.MemberInfo{ID: 0xd, Name: "m4"}, etcdmeta.MemberInfo{ID: 0xe, Name: "m5"}),
			answers: []etcdmeta.MemberStatus{up("a", 0xa, 0xa, 100), up("b", 0xb, 0xa, 100), up("c", 0xc, 0xa, 100), up("d", 0xd, 0xa, 100)},
			leader:  "m1", up: 4, quorum: 3, warn: []string{"m5 (e) is down"}},
		{name: "learner does not vote", list: append(slices.Clone(three), etcdmeta.MemberInfo{ID: 0xd, Name: "m4", Learner: true}),
			answers: []etcdmeta.MemberStatus{up("a", 0xa, 0xa, 100), up("b", 0xb, 0xa, 100), up("c", 0xc, 0xa, 100)},
			leader:  "m1", up: 3, quorum: 2, warn: []string{"m4 (d) is down"}},
		{name: "unstarted member", list: append(slices.Clone(three), etcdmeta.MemberInfo{ID: 0xd}),
			answers: []etcdmeta.MemberStatus{up("a", 0xa, 0xa, 100), up("b", 0xb, 0xa, 100), up("c", 0xc, 0xa, 100)},
			leader:  "m1", up: 3, quorum: 3, warn: []string{"(unstarted d) (d) is down", "3 of 4 members up: losing one more"}},
		{name: "lag and alarms and errors", list: three, answers: []etcdmeta.MemberStatus{up("a", 0xa, 0xa, 50000),
			up("b", 0xb, 0xa, 50000), {Endpoint: "c", ID: 0xc, Leader: 0xa, RaftIndex: 100, MemberErrors: []string{"memberID:12 alarm:NOSPACE"}}},
			alarms: map[uint64][]string{0xb: {"NOSPACE"}, 0xc: {"CORRUPT"}},
			leader: "m1", up: 3, quorum: 2, lag: map[string]uint64{"m3": 49900},
			warn: []string{"m3 is 49900 raft entries behind", "m3 reports: memberID:12 alarm:NOSPACE", "m2 raised NOSPACE", "m3 raised CORRUPT"}},
		{name: "stale endpoint", list: three[:2], answers: []etcdmeta.MemberStatus{up("http://h1:2379", 0xa, 0xa, 100),
			up("http://h2:2379", 0xb, 0xa, 100), down("http://h3:2379")},
			leader: "m1", up: 2, quorum: 2, warn: []string{
				"endpoints the clients are configured with do not: http://h3:2379: context deadline exceeded (a removed member's?",
				"has 2 members and writes need all of them: losing one loses its quorum; add a member"}},
		{name: "split view of the leader", list: three, answers: []etcdmeta.MemberStatus{up("a", 0xa, 0xa, 10), up("b", 0xb, 0xb, 10), up("c", 0xc, 0xb, 10)},
			leader: "m1", up: 3, quorum: 2, warn: []string{"disagree on the leader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := etcdmeta.Judge(tt.list, tt.answers, tt.alarms)
			if got.Leader != tt.leader || got.Up != tt.up || got.Quorum != tt.quorum {
				t.Errorf("leader %q, up %d, quorum %d; want %q, %d, %d", got.Leader, got.Up, got.Quorum, tt.leader, tt.up, tt.quorum)
			}
			for _, m := range got.Members {
				if want, ok := tt.lag[m.Name]; ok && m.Lag != want {
					t.Errorf("member %s lags %d, want %d", m.Name, m.Lag, want)
				}
				if m.Leader != (m.Name == tt.leader && m.Up) && len(tt.warn) == 0 {
					t.Errorf("member %s: leader %v", m.Name, m.Leader)
				}
			}
			if len(got.Warnings) != len(tt.warn) {
				t.Fatalf("warnings %q, want %d matching %q", got.Warnings, len(tt.warn), tt.warn)
			}
			for i, w := range tt.warn {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %d: %q, want it to contain %q", i, got.Warnings[i], w)
				}
			}
		})
	}
}
