package exporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// failing is an exporter of no state whose clock and uids the test sets.
func failing(t *testing.T, topN int, uids map[uint32]uint32) (*Exporter, *prometheus.Registry, *time.Time) {
	t.Helper()
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }, topN)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x.now = func() time.Time { return now }
	x.SetUIDs(func(pid uint32) (uint32, bool) { u, ok := uids[pid]; return u, ok })
	reg := prometheus.NewPedanticRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	return x, reg, &now
}

// resolveFails is an ADDR_ERROR of comm's process pid.
func resolveFails(comm string, pid uint32) *rdma.Event {
	return &rdma.Event{Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM | rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner,
		CMEvent: rdma.CMEvAddrError, Status: -110, Resource: rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0",
			Owner: rdma.Owner{PID: pid, TID: pid, Comm: comm}}}
}

// failureSeries are rdma_failures_total's series by comm: its value.
func failureSeries(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "rdma_failures_total" {
			continue
		}
		for _, m := range mf.Metric {
			key := ""
			for _, l := range m.Label {
				if l.GetName() == "comm" {
					key = l.GetValue() + key
				}
				if l.GetName() == "uid" {
					key += "/" + l.GetValue()
				}
			}
			out[key] += m.Counter.GetValue()
		}
	}
	return out
}

// The review's case: twenty processes of one user (evil01...evil20) fail
// three times each, then root's rping fails once: rping has its own
// series; four more of root's failing owners get theirs, the first user
// keeping half of the ten names; the series stay within topN+1.
func TestOneUsersProcessesCannotTakeEveryName(t *testing.T) {
	uids := map[uint32]uint32{500: 0}
	x, reg, now := failing(t, 10, uids)
	for i := range 20 {
		pid := uint32(1000 + i)
		uids[pid] = 65534
		for range 3 {
			x.Event(resolveFails("evil"+string(rune('a'+i)), pid))
			*now = now.Add(time.Second)
		}
	}
	x.Event(resolveFails("rping", 500))
	// Four more of root's: up to half the names are other users' to take.
	for i := range uint32(4) {
		uids[501+i] = 0
		x.Event(resolveFails("job"+string(rune('a'+i)), 501+i))
	}
	got := failureSeries(t, reg)
	if got["rping/0"] != 1 {
		t.Errorf("rping's failure: %v, want its own series (uid 0): %v", got["rping/0"], got)
	}
	nobody := 0
	for k := range got {
		if strings.HasSuffix(k, "/65534") {
			nobody++
		}
	}
	if nobody != 5 || got["jobd/0"] != 1 {
		t.Errorf("uid 65534 has %d named series beside 5 of root's failing owners, want half of 10: %v", nobody, got)
	}
	if len(got) > 11 {
		t.Errorf("%d series, want at most topN+1: %v", len(got), got)
	}
	if got["other/"] == 0 {
		t.Errorf("the other owners' failures are not counted: %v", got)
	}
}

// An owner that stops failing gives its slot back: 30 minutes later (three
// half-lives), a new owner's one failure outranks its three, and its
// series goes; within the window it keeps its name.
func TestAQuietOwnerGivesItsSlotBack(t *testing.T) {
	x, reg, now := failing(t, 2, map[uint32]uint32{1: 1001, 2: 1002, 3: 1003})
	for range 3 {
		x.Event(resolveFails("alpha", 1))
		x.Event(resolveFails("beta", 2))
	}
	*now = now.Add(time.Minute)
	x.Event(resolveFails("gamma", 3)) // 1 against 3 × 0.93: other
	if got := failureSeries(t, reg); got["gamma/1003"] != 0 || got["other/"] != 1 {
		t.Errorf("a newcomer within the window: %v, want it counted as other", got)
	}
	*now = now.Add(30 * time.Minute)
	x.Event(resolveFails("gamma", 3)) // 1 + 0.12 against 3 × 0.12
	got := failureSeries(t, reg)
	if got["gamma/1003"] != 1 {
		t.Errorf("gamma after alpha and beta went quiet: %v, want a series of its own", got)
	}
	if got["alpha/1001"] != 0 && got["beta/1002"] != 0 || len(got) != 3 {
		t.Errorf("series %v: want one of alpha and beta gone, gamma and other", got)
	}
	if n := testutil.CollectAndCount(x.failures); n != 3 {
		t.Errorf("%d series, want 3", n)
	}
}

// Renaming a process after a named one (comm is the process's choice)
// does not take its series: the uid tells them apart, and the impostor's
// user competes for its own share.
func TestACopiedNameIsNotTheSameOwner(t *testing.T) {
	x, reg, _ := failing(t, 2, map[uint32]uint32{10: 0, 20: 65534})
	x.Event(resolveFails("rping", 10))
	x.Event(resolveFails("rping", 20))
	x.Event(resolveFails("rping", 20))
	got := failureSeries(t, reg)
	if got["rping/0"] != 1 || got["rping/65534"] != 2 {
		t.Errorf("series %v: want root's rping and nobody's apart", got)
	}
}
