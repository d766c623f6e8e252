package health

import (
	"maps"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The QPs in ERR of a netlink dump, by device: a device with none is
// listed with 0 (it was looked at), a QP whose state netlink did not give
// is not counted.
func TestQPsInErr(t *testing.T) {
	qp := func(dev string, st rdma.QPState, given bool) rdma.Resource {
		r := rdma.Resource{Type: rdma.ResQP, DevName: dev, QPState: st}
		if given {
			r.Has |= rdma.HasState
		}
		return r
	}
	got := qpsInErr([]rdma.Resource{qp("rxe0", rdma.QPStateErr, true), qp("rxe0", rdma.QPStateRTS, true), qp("rxe0", rdma.QPStateErr, false), qp("siw0", rdma.QPStateRTS, true)})
	if want := map[string]int{"rxe0": 1, "siw0": 0}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A window keeps the failures and what settles a QP's move to ERR (its
// connection's end, its destroy), not the rest of the stream.
func TestAWindowKeepsWhatItJudges(t *testing.T) {
	create := event(rdma.EvCreate, 0, 1)
	modify := event(rdma.EvModify, 0, 1)
	disc := event(rdma.EvCMDisconnect, 0, 1)
	destroyQP := event(rdma.EvDestroy, 0, 1)
	destroyCQ := event(rdma.EvDestroy, 0, 0)
	destroyCQ.Type = rdma.ResCQ
	for _, c := range []struct {
		name string
		e    rdma.Event
		want bool
	}{{"create", create, false}, {"move to ERR", modify, true}, {"disconnect", disc, true}, {"QP's destroy", destroyQP, true}, {"CQ's destroy", destroyCQ, false}} {
		if got := wanted(&c.e); got != c.want {
			t.Errorf("%s: kept %v, want %v", c.name, got, c.want)
		}
	}
}

// Run without a window reads the host's state and judges it.
func TestRunWithoutAWindow(t *testing.T) {
	r := Run(RunOptions{Options: defaults(), Host: Host{Root: t.TempDir(), Cgroup: "-"}})
	if r.Verdict != Problem || r.Source != "" || len(r.Findings) != 3 {
		t.Errorf("an empty root: %+v", r)
	}
}
