package why

import (
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var synT0 = time.Date(2026, 11, 27, 7, 20, 0, 0, time.UTC)

func qpEvent(kind rdma.EventKind, dev string, qpn uint32, at time.Duration, pid uint32) *rdma.Event {
	e := &rdma.Event{Kind: kind, Time: synT0.Add(at), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	e.Type, e.DevName, e.LQPN = rdma.ResQP, dev, qpn
	e.Resource.Has |= rdma.HasLQPN
	e.Owner = rdma.Owner{PID: pid, Comm: "p"}
	return e
}

// syndromesOf is the join of reps, given in order.
func syndromesOf(reps ...*rdma.KernelReport) *Syndromes {
	s := NewSyndromes()
	for _, r := range reps {
		s.Take(r)
	}
	return s
}

func syndrome(dev string, qpn uint32, at time.Duration, wall bool) *rdma.KernelReport {
	r := &rdma.KernelReport{Kind: rdma.KernQPErrSyndrome, Device: dev, Port: 1, QPN: qpn, StatusMsg: "local protection error",
		Syndrome: 4, HasSyndrome: true, WCStatus: 4, HasWCStatus: true, VendorSyndrome: 0x41}
	if wall {
		r.Wall, r.HasWall = synT0.Add(at), true
	} else {
		r.Seconds, r.HasSeconds = 100, true
	}
	return r
}

// Each syndrome gets the QP of its device and number alive at its time:
// a number reused is told apart by time, a line a little outside a life
// (whole seconds) still finds it, one well outside finds none; a time since
// boot finds a QP only when its number is unique.
func TestSyndromesJoinTheQPAliveAtTheLinesTime(t *testing.T) {
	events := []*rdma.Event{
		qpEvent(rdma.EvExists, "mlx5_0", 7, 0, 10),
		qpEvent(rdma.EvExists, "mlx5_0", 7, 0, 10), // a snapshot again: the same QP
		qpEvent(rdma.EvCreate, "mlx5_0", 137, time.Second, 100),
		qpEvent(rdma.EvDestroy, "mlx5_0", 137, 3*time.Second, 100),
		qpEvent(rdma.EvCreate, "mlx5_0", 137, 10*time.Second, 200),
		qpEvent(rdma.EvCreate, "mlx5_0", 137, 30*time.Second, 300), // the last one's destroy was lost
		qpEvent(rdma.EvCreate, "mlx5_1", 137, 0, 400),              // another device
		qpEvent(rdma.EvCreate, "mlx5_0", 8, 0, 500),                // not asked about
	}
	cases := []struct {
		rep  *rdma.KernelReport
		want uint32 // owner pid; 0: none
	}{
		{syndrome("mlx5_0", 137, 2*time.Second, true), 100},
		{syndrome("mlx5_0", 137, 4*time.Second, true), 100}, // 1 s after its destroy
		{syndrome("mlx5_0", 137, 6*time.Second, true), 0},   // none alive
		{syndrome("mlx5_0", 137, 9*time.Second, true), 200}, // 1 s before its create
		{syndrome("mlx5_0", 137, 20*time.Second, true), 200},
		{syndrome("mlx5_0", 137, 40*time.Second, true), 300},
		{syndrome("mlx5_1", 137, 40*time.Second, true), 400},
		{syndrome("mlx5_0", 137, 0, false), 0}, // since boot, three QPs 137
		{syndrome("mlx5_0", 7, 0, false), 10},  // since boot, one QP 7
		{syndrome("mlx5_0", 9, 0, true), 0},
	}
	var reps []*rdma.KernelReport
	for _, c := range cases {
		reps = append(reps, c.rep)
	}
	reps = append(reps, &rdma.KernelReport{Kind: rdma.KernRestrackNamed, Device: "mlx5_0"})
	s := syndromesOf(reps...)
	for _, e := range events {
		s.Add(e)
	}
	noQP := s.Join()
	if len(s.Reports()) != len(cases) {
		t.Fatalf("%d syndromes, want %d", len(s.Reports()), len(cases))
	}
	for i, c := range cases {
		got := uint32(0)
		if c.rep.QP != nil {
			got = c.rep.QP.Owner.PID
		}
		if got != c.want || (got == 0) != (noQP[c.rep].Why != "") {
			t.Errorf("case %d (%s QP %d): owner %d (%q), want %d", i, c.rep.Device, c.rep.QPN, got, noQP[c.rep].Why, c.want)
		}
	}
}

// The why line of a joined syndrome: at the log's time, on the QP with its
// owner and the port the line names, fatal, in words.
func TestSyndromeLineIsTheQPsFailure(t *testing.T) {
	r := syndrome("mlx5_0", 137, 2*time.Second, true)
	r.QP = qpEvent(rdma.EvCreate, "mlx5_0", 137, time.Second, 100)
	l := SyndromeLine(r, 0)
	want := "mlx5_0/1 QP 137: local protection error (CQE syndrome 0x4; vendor syndrome 0x41, hw 0x0/0x0): a local buffer outside its MR, or a wrong lkey"
	if !l.Time.Equal(synT0.Add(2*time.Second)) || l.What != SyndromeWhat || l.Severity != rdma.SevFatal || l.Why != want ||
		l.Res.Owner.PID != 100 || !l.Res.Given(rdma.HasPort) || l.Res.Port != 1 {
		t.Errorf("%+v", l)
	}
	a := New(Options{QPN: 137, HasQPN: true})
	if !a.Keeps(r.QP) || New(Options{QPN: 7, HasQPN: true}).Keeps(r.QP) {
		t.Error("--qpn does not select the syndrome's QP")
	}
}
