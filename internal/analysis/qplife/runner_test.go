package qplife

import (
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

type sink struct {
	mu   sync.Mutex
	qps  []string
	gids []string
}

func (s *sink) WriteQP(q *rdma.QPIdentity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.qps = append(s.qps, line(q))
}

func (s *sink) WriteGID(e *rdma.GIDEntry, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gids = append(s.gids, e.DevName+" "+rdma.GIDText(e.GID))
}

func (s *sink) counts() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.qps), len(s.gids)
}

// The Runner sends the GID table at start and what changes in it, asks
// netlink for the remote QPN of a connected QP, and gives owners' exits
// to the tracker.
func TestTheRunnerFeedsTheTracker(t *testing.T) {
	out := &sink{}
	var mu sync.Mutex
	table := []rdma.GIDEntry{{DevName: "rxe0", Port: 1, Index: 1, GID: netip.MustParseAddr("::ffff:10.98.1.2"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "eth0"}}
	var emitExit func(rdma.ExitStatus)
	r := Start(RunOptions{Node: "node-b", Out: out, GIDEvery: 10 * time.Millisecond,
		Tracker: Options{ExitWait: time.Minute, RemoteWait: time.Minute},
		GIDs: func() ([]rdma.GIDEntry, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]rdma.GIDEntry(nil), table...), nil
		},
		RemoteQPNs: func(need map[string][]uint32) (map[string]map[uint32]uint32, error) {
			return map[string]map[uint32]uint32{"rxe0": {17: 18}}, nil
		},
		Exits: func(emit func(rdma.ExitStatus)) (func(), error) { emitExit = emit; return func() {}, nil },
	})
	if _, g := out.counts(); g != 1 {
		t.Fatalf("GID records at start: %d, want 1", g)
	}
	mu.Lock()
	table = append(table, rdma.GIDEntry{DevName: "rxe0", Port: 1, Index: 2, GID: netip.MustParseAddr("fe80::5054:ff:fe00:9802"), Eth: true, Netdev: "eth0"})
	mu.Unlock()
	r.Event(ev(rdma.EvCreate, 0, 17))
	r.Event(modify(1, 17, rdma.QPStateRTR))
	deadline := time.Now().Add(10 * time.Second)
	for {
		q, g := out.counts()
		if q == 2 && g == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d QP records, %d GID records; want the connected record and the new GID", q, g)
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := ev(rdma.EvDestroy, 2, 17)
	d.Flags |= rdma.EvActorExiting
	r.Event(d)
	emitExit(rdma.ExitStatus{PID: 999, Time: time.Now(), Code: 9})
	r.Close()
	out.mu.Lock()
	defer out.mu.Unlock()
	check(t, out.qps,
		"created qp 17 rxe0/1 RESET ib_write_bw[999] created +0s at +0s",
		out.qps[1], // connected, at the time netlink answered
		"ended qp 17 rxe0/1 RTR ib_write_bw[999] created +0s rqpn 18 fate signal +2ms SIGKILL at +2ms")
	check(t, out.gids, "rxe0 ::ffff:10.98.1.2", "rxe0 fe80::5054:ff:fe00:9802")
}

func TestTheSummarySaysWhatWasSentAndWhatWasMissing(t *testing.T) {
	r := Start(RunOptions{Node: "n", Out: &sink{},
		GIDs: func() ([]rdma.GIDEntry, error) {
			return []rdma.GIDEntry{{DevName: "rxe0", Port: 1, GID: netip.MustParseAddr("fe80::1")}}, nil
		},
		Exits: func(func(rdma.ExitStatus)) (func(), error) {
			return nil, errors.New("process events need CAP_NET_ADMIN")
		}})
	r.Event(ev(rdma.EvCreate, 0, 17))
	r.Close()
	want := "identity records: 1 of QPs, 1 of GID table entries; owners' exit statuses unavailable: process events need CAP_NET_ADMIN"
	if got := r.Summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
