package peer

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// memStore is a Store in memory: the interface is small enough that
// another store (or a test) implements it in a few lines.
type memStore struct {
	gids    []rdma.GIDRecord
	qps     []rdma.QPIdentity
	asked   int
	failing error
}

func (m *memStore) String() string { return "the test's store" }

func (m *memStore) GIDs(_ context.Context, gid netip.Addr, until time.Time, limit int) ([]rdma.GIDRecord, error) {
	m.asked++
	var out []rdma.GIDRecord
	for i := len(m.gids) - 1; i >= 0 && len(out) < limit; i-- {
		if g := m.gids[i]; g.GID == gid && (until.IsZero() || !g.Time.After(until)) {
			out = append(out, g)
		}
	}
	return out, m.failing
}

func (m *memStore) QPs(_ context.Context, q store.QPQuery) ([]rdma.QPIdentity, error) {
	m.asked++
	var out []rdma.QPIdentity
	for i := len(m.qps) - 1; i >= 0; i-- {
		r := m.qps[i]
		if r.QPN != q.QPN || (!q.CreatedBy.IsZero() && r.Created.After(q.CreatedBy)) {
			continue
		}
		if (q.Node != "" && (r.Node != q.Node || r.Dev != q.Dev)) || (q.Node == "" && r.LocalGID != q.LocalGID) {
			continue
		}
		out = append(out, r)
	}
	return out, m.failing
}

var w0 = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

func fleet() *memStore {
	gidA, gidB := netip.MustParseAddr("::ffff:10.98.1.1"), netip.MustParseAddr("::ffff:10.98.1.2")
	return &memStore{
		gids: []rdma.GIDRecord{{Node: "node-b", GIDEntry: rdma.GIDEntry{DevName: "rxe0", Port: 1, GID: gidB}, Time: w0}},
		qps: []rdma.QPIdentity{
			// node-a's QP 0x11, connected to node-b's 0x22
			{Node: "node-a", Dev: "rxe0", QPN: 0x11, Created: w0, LocalGID: gidA, RemoteGID: gidB, RemoteQPN: 0x22, HasRemoteQPN: true,
				Owner: rdma.Owner{PID: 4242, Comm: "train.py"}, Change: rdma.QPConnected, Time: w0.Add(time.Millisecond)},
			// node-b's QP 0x22, killed 1.2 s before the failure
			{Node: "node-b", Dev: "rxe0", QPN: 0x22, Created: w0, Owner: rdma.Owner{PID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{PodUID: "b"}},
				Change: rdma.QPEnded, Time: w0.Add(8800 * time.Millisecond), Fate: rdma.FateSignal, Signal: 9, Ended: w0.Add(8800 * time.Millisecond)},
		},
	}
}

func failedLine(withPeer bool) *why.Line {
	e := rdma.Event{Kind: rdma.EvModify, Time: w0.Add(10 * time.Second), Flags: rdma.EvHasRes | rdma.EvHasDev,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", LQPN: 0x11, Has: rdma.HasLQPN}}
	if withPeer {
		e.Kind = rdma.EvQPError
		e.Fault = rdma.Fault{WCStatus: 12, PeerGID: netip.MustParseAddr("::ffff:10.98.1.2"), PeerQPN: 0x22}
	}
	return &why.Line{Time: e.Time, Res: e, What: "RETRY_EXC_ERR"}
}

// why --store names the failed QP's peer: from the failure's event when
// it carried the peer, else from the QP's own record (its node sent it
// at the connect); a second line of the same failure asks nothing more.
func TestWhyNamesThePeerAcrossHosts(t *testing.T) {
	want := "its peer QP 34 on node-b (ib_write_bw[999], pod b) was freed 1.2 s earlier when its owner was killed by SIGKILL"
	for _, withPeer := range []bool{true, false} {
		s := fleet()
		name := ForWhy(NewNamer(s, 0), "node-a")
		if got := name(failedLine(withPeer)); got != want {
			t.Errorf("peer in the event %v:\n got %q\nwant %q", withPeer, got, want)
		}
		asked := s.asked
		name(failedLine(withPeer))
		if s.asked != asked {
			t.Errorf("the same failure asked the store again")
		}
	}
}

// When the store has nothing, or cannot be asked, the words say what was
// asked and what was missing.
func TestWhySaysWhatTheStoreLacked(t *testing.T) {
	s := fleet()
	s.qps = s.qps[1:] // node-a never sent its records
	if got := ForWhy(NewNamer(s, 0), "node-a")(failedLine(false)); !strings.Contains(got, "has no record of QP 17 on node-a rxe0") || !strings.Contains(got, "--otlp --node node-a") {
		t.Errorf("no record of our own QP: %q", got)
	}
	s = fleet()
	s.gids = nil
	if got := ForWhy(NewNamer(s, 0), "node-a")(failedLine(true)); !strings.Contains(got, "no node reported GID ::ffff:10.98.1.2") {
		t.Errorf("no GID record: %q", got)
	}
	s = fleet()
	s.gids, s.qps, s.failing = nil, nil, errors.New("connection refused")
	if got := ForWhy(NewNamer(s, 0), "node-a")(failedLine(true)); !strings.Contains(got, "connection refused") {
		t.Errorf("a store that cannot be asked: %q", got)
	}
}

// A live why waits for a young failure's peer to be recorded: the store
// shows the peer alive when the failure is read (its node's record of
// the death still on its way), ended once the failure is Settle old;
// a failure that old already, or whose peer has ended, waits for
// nothing.
func TestLiveWhyWaitsForThePeersEnd(t *testing.T) {
	s := fleet()
	ended := s.qps[1]
	alive := ended
	alive.Change, alive.Fate, alive.Signal, alive.Ended, alive.Time = rdma.QPConnected, rdma.FateAlive, 0, time.Time{}, w0.Add(time.Millisecond)
	s.qps[1] = alive
	n := NewNamer(s, 0)
	n.Settle(5 * time.Second)
	failedAt := w0.Add(10 * time.Second)
	now := failedAt.Add(500 * time.Millisecond) // the failure is read half a second after it
	var slept []time.Duration
	n.now = func() time.Time { return now }
	n.sleep = func(d time.Duration) {
		slept = append(slept, d)
		now = now.Add(d)
		s.qps[1] = ended // the peer's node's record arrives
	}
	got := ForWhy(n, "node-a")(failedLine(true))
	want := "its peer QP 34 on node-b (ib_write_bw[999], pod b) was freed 1.2 s earlier when its owner was killed by SIGKILL"
	if got != want || len(slept) != 1 || slept[0] != 4500*time.Millisecond {
		t.Errorf("got %q after sleeping %v; want %q after 4.5s", got, slept, want)
	}
	// Old enough already: asked once, no wait, the answer as it stands.
	s.qps[1] = alive
	n = NewNamer(s, 0)
	n.Settle(5 * time.Second)
	slept = nil
	n.now = func() time.Time { return failedAt.Add(6 * time.Second) }
	n.sleep = func(d time.Duration) { slept = append(slept, d) }
	if got := ForWhy(n, "node-a")(failedLine(true)); len(slept) != 0 || !strings.Contains(got, "alive") {
		t.Errorf("an old failure: %q after sleeping %v", got, slept)
	}
}
