package formats

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var peerT0 = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

func peerMS(n int) time.Time { return peerT0.Add(time.Duration(n) * time.Millisecond) }

// peerAnswers are the answers of the golden tests: the killed QP asked
// about at a time in its life, the same after it ended (none held the
// QPN then), the live QP asked about now, and a GID no node reported.
func peerAnswers() map[string]peer.Answer {
	gidB, gidA := netip.MustParseAddr("::ffff:10.98.1.2"), netip.MustParseAddr("::ffff:10.98.1.1")
	place := &rdma.GIDRecord{Node: "node-b", GIDEntry: rdma.GIDEntry{DevName: "rxe0", Port: 1, Index: 1, GID: gidB, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "eth0"}, Time: peerMS(-1000)}
	killed := &rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 17, Type: rdma.QPTypeRC, Created: peerMS(0), State: rdma.QPStateRTS,
		LocalGID: gidB, RemoteGID: gidA, RemoteQPN: 18, HasRemoteQPN: true,
		Owner:       rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{Cgroup: "/kubepods/pod1234/cri-containerd-3f2a", Runtime: "containerd", ContainerID: "3f2a", PodUID: "1234-5678"}},
		Transitions: []rdma.QPTransition{{State: rdma.QPStateRTR, At: peerMS(2)}, {State: rdma.QPStateRTS, At: peerMS(3)}},
		Change:      rdma.QPEnded, Time: peerMS(4000), Fate: rdma.FateSignal, Ended: peerMS(4000), Signal: 9}
	live := &rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 17, Type: rdma.QPTypeRC, Created: peerMS(5000), State: rdma.QPStateRTS,
		RemoteGID: gidA, RemoteQPN: 21, HasRemoteQPN: true, Owner: rdma.Owner{PID: 1000, TID: 1000, Comm: "rping"},
		Transitions: []rdma.QPTransition{{State: rdma.QPStateRTR, At: peerMS(5002)}}, Change: rdma.QPConnected, Time: peerMS(5010)}
	q := func(at time.Time) peer.Query {
		return peer.Query{Addr: netip.MustParseAddr("10.98.1.2"), QPN: 17, At: at}
	}
	return map[string]peer.Answer{
		"killed-at":     {Query: q(peerMS(3000)), GID: gidB, Place: place, Node: "node-b", Dev: "rxe0", QP: killed, Which: peer.WhichAt, Lifetimes: 1, Store: "VictoriaLogs at http://127.0.0.1:9428"},
		"killed-before": {Query: q(peerMS(5200)), GID: gidB, Place: place, Node: "node-b", Dev: "rxe0", QP: killed, Which: peer.WhichBefore, Lifetimes: 1, Store: "VictoriaLogs at http://127.0.0.1:9428"},
		"live":          {Query: q(time.Time{}), GID: gidB, Place: place, Node: "node-b", Dev: "rxe0", QP: live, Which: peer.WhichLive, Lifetimes: 2, Store: "VictoriaLogs at http://127.0.0.1:9428"},
		"missing": {Query: peer.Query{Addr: netip.MustParseAddr("10.98.9.9"), QPN: 17}, GID: netip.MustParseAddr("::ffff:10.98.9.9"), PlacedByQP: true,
			Missing: "no node reported GID ::ffff:10.98.9.9 in its GID table, and no QP 17 sending from it was recorded", Store: "VictoriaLogs at http://127.0.0.1:9428"},
	}
}

// One golden per output format and answer: the human view and -j.
func TestPeerViewsMatchTheirGoldens(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	now := peerMS(65_000)
	for name, a := range peerAnswers() {
		t.Run(name, func(t *testing.T) {
			golden.Check(t, filepath.Join("testdata", "peer", name+".txt"), []byte(PeerText(a, now)))
			golden.Check(t, filepath.Join("testdata", "peer", name+".json"), append(AppendJSON(nil, PeerObject(a)), '\n'))
		})
	}
}

// What the store returns comes from other nodes: a comm or a node name
// with control characters is escaped in the human view and in JSON.
func TestPeerViewsEscapeWhatTheStoreSays(t *testing.T) {
	a := peerAnswers()["live"]
	qp := *a.QP
	qp.Owner.Comm, qp.Node = "rp\x1b[2Jing", "node\u202eb"
	a.QP = &qp
	if s := PeerText(a, peerMS(0)); strings.ContainsAny(s, "\x1b\u202e") {
		t.Errorf("human view %q", s)
	}
	if s := string(AppendJSON(nil, PeerObject(a))); strings.ContainsAny(s, "\x1b") {
		t.Errorf("-j %q", s)
	}
}
