package top

import (
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// ev is an event of kind k about a resource of type ty on rxe0 (index 1),
// owned by comm[pid], at ms milliseconds.
func ev(k rdma.EventKind, ty rdma.ResType, id uint32, pid uint32, comm string, ms int) rdma.Event {
	e := rdma.Event{Kind: k, Mono: uint64(ms) * 1e6, Time: t0.Add(time.Duration(ms) * time.Millisecond),
		Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser}
	e.Type, e.DevIndex, e.DevName, e.ID = ty, 1, "rxe0", id
	e.Owner = rdma.Owner{PID: pid, TID: pid, Comm: comm}
	switch ty {
	case rdma.ResQP:
		e.LQPN, e.QPType, e.Resource.Has = id, rdma.QPTypeRC, rdma.HasLQPN|rdma.HasQPType
	case rdma.ResCQ:
		e.CQN = id
	case rdma.ResPD:
		e.PDN = id
	case rdma.ResMR:
		e.MRN = id
	case rdma.ResCMID:
		e.CMIDN = id
	}
	return e
}

func qpState(e rdma.Event, s rdma.QPState) rdma.Event {
	e.SetState(uint8(s))
	return e
}

func feed(a *Aggregator, evs ...rdma.Event) {
	for i := range evs {
		a.Add(&evs[i])
	}
}

func ownerRow(t *testing.T, f *Frame, label string) Row {
	t.Helper()
	for _, r := range f.Owners {
		if r.Label(f.By) == label {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", label, f.Owners)
	return Row{}
}

func TestLiveObjectsAndQPStatesPerOwnerDeviceAndNode(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	qp := ev(rdma.EvCreate, rdma.ResQP, 17, 300, "rping", 10)
	feed(a, ev(rdma.EvCreate, rdma.ResPD, 1, 300, "rping", 1), ev(rdma.EvCreate, rdma.ResCQ, 2, 300, "rping", 2),
		qpState(qp, rdma.QPStateReset),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 11), rdma.QPStateInit),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 12), rdma.QPStateRTR),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 13), rdma.QPStateRTS),
		ev(rdma.EvCreate, rdma.ResMR, 4, 301, "rping", 20), ev(rdma.EvDestroy, rdma.ResMR, 4, 301, "rping", 30))
	f := a.Frame(t0.Add(2 * time.Second))
	r := ownerRow(t, f, "rping[300]")
	if r.LiveOf(rdma.ResQP) != 1 || r.LiveOf(rdma.ResCQ) != 1 || r.LiveOf(rdma.ResPD) != 1 || r.InState(rdma.QPStateRTS) != 1 || r.InState(rdma.QPStateReset) != 0 {
		t.Errorf("rping[300]: %+v", r.Counts)
	}
	if r.Creates != 3 || r.CreateRate != 1.5 {
		t.Errorf("rping[300]: %d creates, %v/s; want 3, 1.5/s", r.Creates, r.CreateRate)
	}
	other := ownerRow(t, f, "rping[301]")
	if other.TotalLive() != 0 || other.Creates != 1 || other.Destroys != 1 {
		t.Errorf("rping[301]: %+v", other.Counts)
	}
	if len(f.Devices) != 1 || f.Devices[0].Name != "rxe0" || f.Devices[0].TotalLive() != 3 || f.Devices[0].Creates != 4 {
		t.Errorf("devices: %+v", f.Devices)
	}
	if f.Node.TotalLive() != 3 || f.Node.InState(rdma.QPStateRTS) != 1 || f.Node.Destroys != 1 {
		t.Errorf("node: %+v", f.Node.Counts)
	}
	// The next frame's rates are the next interval's alone.
	f = a.Frame(t0.Add(3 * time.Second))
	if r := ownerRow(t, f, "rping[300]"); r.CreateRate != 0 || r.LiveOf(rdma.ResQP) != 1 {
		t.Errorf("second frame: %+v", r)
	}
}

// A create traced between the attach and the listing is listed too: one
// object, not two.
func TestListingAfterCreateIsOneObject(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	feed(a, ev(rdma.EvCreate, rdma.ResCQ, 2, 300, "rping", 1), ev(rdma.EvExists, rdma.ResCQ, 2, 300, "rping", 2),
		ev(rdma.EvExists, rdma.ResPD, 1, 300, "rping", 2))
	f := a.Frame(t0.Add(time.Second))
	if r := ownerRow(t, f, "rping[300]"); r.TotalLive() != 2 || r.Creates != 1 {
		t.Errorf("%+v: want 2 live, 1 create (a listing is no create)", r.Counts)
	}
}

// Events from two CPUs can swap: a destroy before its create, a modify
// before its create. Neither leaves a ghost.
func TestEventsOutOfOrder(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	feed(a, ev(rdma.EvDestroy, rdma.ResMR, 4, 300, "rping", 20), ev(rdma.EvCreate, rdma.ResMR, 4, 300, "rping", 19),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 12), rdma.QPStateInit),
		qpState(ev(rdma.EvCreate, rdma.ResQP, 17, 300, "rping", 11), rdma.QPStateReset),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 14), rdma.QPStateRTS),
		qpState(ev(rdma.EvModify, rdma.ResQP, 17, 300, "rping", 13), rdma.QPStateRTR))
	f := a.Frame(t0.Add(time.Second))
	r := ownerRow(t, f, "rping[300]")
	if r.LiveOf(rdma.ResMR) != 0 || r.Creates != 2 || r.Destroys != 1 {
		t.Errorf("MR: %+v", r.Counts)
	}
	if r.LiveOf(rdma.ResQP) != 1 || r.InState(rdma.QPStateRTS) != 1 {
		t.Errorf("QP: %+v, want one in RTS", r.Counts)
	}
	// A destroy whose create never comes is let go after two refreshes.
	feed(a, ev(rdma.EvDestroy, rdma.ResPD, 9, 300, "rping", 3000))
	a.Frame(t0.Add(2 * time.Second))
	if len(a.objs) != 2 {
		t.Errorf("%d objects followed, want the QP and the PD's destroy, still waiting for its create", len(a.objs))
	}
	a.Frame(t0.Add(3 * time.Second))
	a.Frame(t0.Add(4 * time.Second))
	if len(a.objs) != 1 {
		t.Errorf("%d objects followed, want the QP alone", len(a.objs))
	}
}

// An rdma_cm ID counts once: from its creation unbound to its bind to a
// device (the same object, now on the device) and its destroy.
func TestCMIDUnboundThenBound(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	c := ev(rdma.EvCMIDCreate, rdma.ResCMID, 0, 300, "rping", 1)
	c.Flags &^= rdma.EvHasDev
	c.Obj = 0xffff1
	b := ev(rdma.EvCreate, rdma.ResCMID, 3, 300, "rping", 2)
	b.Obj = 0xffff1
	feed(a, c, b)
	f := a.Frame(t0.Add(time.Second))
	if r := ownerRow(t, f, "rping[300]"); r.LiveOf(rdma.ResCMID) != 1 || r.Creates != 1 {
		t.Errorf("owner: %+v", r.Counts)
	}
	if f.Devices[0].LiveOf(rdma.ResCMID) != 1 {
		t.Errorf("device: %+v", f.Devices[0].Counts)
	}
	d := ev(rdma.EvCMIDDestroy, rdma.ResCMID, 3, 300, "rping", 3)
	feed(a, d, ev(rdma.EvDestroy, rdma.ResCMID, 3, 300, "rping", 4))
	f = a.Frame(t0.Add(2 * time.Second))
	if f.Node.LiveOf(rdma.ResCMID) != 0 || f.Node.Destroys != 1 {
		t.Errorf("node: %+v", f.Node.Counts)
	}
}

func TestConnectsAndLastFailure(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	est := ev(rdma.EvCMEventHandler, rdma.ResCMID, 3, 300, "rping", 5)
	est.Flags |= rdma.EvHasCM
	est.CMEvent = rdma.CMEvEstablished
	done := est
	done.Kind = rdma.EvCMEventDone
	rej := ev(rdma.EvCMEventHandler, rdma.ResCMID, 4, 300, "rping", 6)
	rej.Flags |= rdma.EvHasCM
	rej.CMEvent, rej.Status = rdma.CMEvUnreachable, -110
	feed(a, est, done, rej)
	f := a.Frame(t0.Add(time.Second))
	r := ownerRow(t, f, "rping[300]")
	if r.Connects != 1 || r.Failures != 1 || r.FailRate != 1 {
		t.Errorf("%+v: want 1 connect (the handler's, not the done's again), 1 failure", r.Counts)
	}
	want, _ := rej.Failure()
	if r.LastFailure != want.Why || !r.LastFailureAt.Equal(rej.Time) || f.Node.LastFailure != want.Why {
		t.Errorf("last failure %q at %v, want %q", r.LastFailure, r.LastFailureAt, want.Why)
	}
}

// Past the bound, owners count in one "other" row, and how many there
// were is told.
func TestOwnersPastTheBoundAreOther(t *testing.T) {
	a := New(ByProcess, 2, 0)
	a.Start(t0)
	for pid := uint32(1); pid <= 5; pid++ {
		feed(a, ev(rdma.EvCreate, rdma.ResPD, pid, pid, "p", int(pid)), ev(rdma.EvCreate, rdma.ResPD, 100+pid, pid, "p", int(pid)))
	}
	f := a.Frame(t0.Add(time.Second))
	if len(f.Owners) != 3 || f.OwnersFolded != 3 {
		t.Fatalf("%d rows, %d folded; want 2 owners and other, 3 folded", len(f.Owners), f.OwnersFolded)
	}
	o := ownerRow(t, f, "other")
	if o.LiveOf(rdma.ResPD) != 6 || o.Creates != 6 {
		t.Errorf("other: %+v", o.Counts)
	}
	// The other row's objects leave it when destroyed.
	feed(a, ev(rdma.EvDestroy, rdma.ResPD, 5, 5, "p", 50))
	f = a.Frame(t0.Add(2 * time.Second))
	if o := ownerRow(t, f, "other"); o.LiveOf(rdma.ResPD) != 5 {
		t.Errorf("other after a destroy: %+v", o.Counts)
	}
}

// A process that has gone (nothing alive, nothing done) leaves the table
// after a few frames, and its slot is used again.
func TestIdleOwnersGo(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	feed(a, ev(rdma.EvCreate, rdma.ResPD, 1, 300, "gone", 1), ev(rdma.EvDestroy, rdma.ResPD, 1, 300, "gone", 2))
	for i := 1; i <= lingerFrames; i++ {
		f := a.Frame(t0.Add(time.Duration(i) * time.Second))
		if len(f.Owners) != 1 {
			t.Fatalf("frame %d: %d rows, want gone[300] still", i, len(f.Owners))
		}
	}
	if f := a.Frame(t0.Add(10 * time.Second)); len(f.Owners) != 0 || len(a.ownerIdx) != 0 {
		t.Errorf("%d rows, %d owners followed; want none", len(f.Owners), len(a.ownerIdx))
	}
	feed(a, ev(rdma.EvCreate, rdma.ResPD, 2, 301, "new", 20000))
	if len(a.owners) != 2 {
		t.Errorf("%d slots, want the freed one reused", len(a.owners))
	}
}

func TestGroupedByPlace(t *testing.T) {
	pod := &rdma.Placement{PodUID: "1234-abcd", Runtime: "containerd", ContainerID: "c0ffee"}
	job := &rdma.Placement{Runtime: "slurm", ContainerID: "4242.0"}
	mk := func(pid uint32, p *rdma.Placement, id uint32) rdma.Event {
		e := ev(rdma.EvCreate, rdma.ResQP, id, pid, "app", int(id))
		e.Owner.Place = p
		return e
	}
	kern := ev(rdma.EvCreate, rdma.ResQP, 1, 0, "", 1)
	kern.Owner = rdma.Owner{KernName: "ib_core"}
	evs := []rdma.Event{mk(10, pod, 10), mk(11, pod, 11), mk(20, job, 20), mk(30, nil, 30), kern}
	for _, c := range []struct {
		by   By
		want map[string]int64
	}{
		{ByPod, map[string]int64{"1234-abcd": 2, "(no pod)": 2, "ib_core (kernel)": 1}},
		{ByJob, map[string]int64{"4242": 1, "(no job)": 3, "ib_core (kernel)": 1}},
		{ByContainer, map[string]int64{"c0ffee": 2, "4242.0": 1, "(no container)": 1, "ib_core (kernel)": 1}},
		{ByProcess, map[string]int64{"app[10]": 1, "app[11]": 1, "app[20]": 1, "app[30]": 1, "ib_core (kernel)": 1}},
	} {
		a := New(c.by, 0, 0)
		a.Start(t0)
		feed(a, evs...)
		f := a.Frame(t0.Add(time.Second))
		if len(f.Owners) != len(c.want) {
			t.Errorf("by %s: %d rows, want %d", c.by, len(f.Owners), len(c.want))
		}
		for label, n := range c.want {
			if r := ownerRow(t, f, label); r.LiveOf(rdma.ResQP) != n {
				t.Errorf("by %s: %s has %d QPs, want %d", c.by, label, r.LiveOf(rdma.ResQP), n)
			}
		}
	}
}

// The object table is bounded: past it, creates are counted as
// untracked (in the rates, not the live counts).
func TestObjectsPastTheBoundAreUntracked(t *testing.T) {
	a := New(ByProcess, 0, 2)
	a.Start(t0)
	feed(a, ev(rdma.EvCreate, rdma.ResPD, 1, 300, "p", 1), ev(rdma.EvCreate, rdma.ResPD, 2, 300, "p", 2), ev(rdma.EvCreate, rdma.ResPD, 3, 300, "p", 3))
	f := a.Frame(t0.Add(time.Second))
	if f.Untracked != 1 || f.Node.TotalLive() != 2 || f.Node.Creates != 3 {
		t.Errorf("untracked %d, live %d, creates %d; want 1, 2, 3", f.Untracked, f.Node.TotalLive(), f.Node.Creates)
	}
}

func TestSortOrders(t *testing.T) {
	rows := []Row{{Name: "b", PID: 2, CreateRate: 5}, {Other: true, CreateRate: 100}, {Name: "a", PID: 1, CreateRate: 5},
		{Name: "c", PID: 3, Counts: Counts{Failures: 9}, FailRate: 1}}
	Sort(rows, SortCreates, ByProcess)
	if got := rows[0].Label(ByProcess) + " " + rows[1].Label(ByProcess) + " " + rows[2].Label(ByProcess) + " " + rows[3].Label(ByProcess); got != "a[1] b[2] c[3] other" {
		t.Errorf("by creates: %s", got)
	}
	Sort(rows, SortFailures, ByProcess)
	if rows[0].Name != "c" || !rows[3].Other {
		t.Errorf("by failures: %+v", rows)
	}
	for _, w := range SortKeys() {
		if k, err := ParseSortKey(w); err != nil || k.String() != w {
			t.Errorf("ParseSortKey(%q) = %v, %v", w, k, err)
		}
	}
	if _, err := ParseBy("rack"); err == nil {
		t.Error("ParseBy(rack): no error")
	}
}

// Folding an event in allocates nothing: a job's start is thousands of
// creates a second.
func TestAddAllocatesNothing(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	evs := burst(256)
	feed(a, evs...) // the maps have grown to size
	a.Frame(t0.Add(time.Second))
	if n := testing.AllocsPerRun(20, func() { feed(a, evs...) }); n != 0 {
		t.Errorf("%v allocations per burst of %d events, want 0", n, len(evs))
	}
}

// burst is n processes' worth of a verbs program's start and end: PD, CQ,
// QP through RTS, MR, then all destroyed.
func burst(n int) []rdma.Event {
	var evs []rdma.Event
	for i := range n {
		pid, id, ms := uint32(1000+i%64), uint32(i+1), i
		evs = append(evs, ev(rdma.EvCreate, rdma.ResPD, id, pid, "app", ms), ev(rdma.EvCreate, rdma.ResCQ, id, pid, "app", ms),
			qpState(ev(rdma.EvCreate, rdma.ResQP, id, pid, "app", ms), rdma.QPStateReset),
			qpState(ev(rdma.EvModify, rdma.ResQP, id, pid, "app", ms), rdma.QPStateInit),
			qpState(ev(rdma.EvModify, rdma.ResQP, id, pid, "app", ms), rdma.QPStateRTS),
			ev(rdma.EvCreate, rdma.ResMR, id, pid, "app", ms))
	}
	for i := range n {
		pid, id, ms := uint32(1000+i%64), uint32(i+1), n+i
		evs = append(evs, ev(rdma.EvDestroy, rdma.ResMR, id, pid, "app", ms), ev(rdma.EvDestroy, rdma.ResQP, id, pid, "app", ms),
			ev(rdma.EvDestroy, rdma.ResCQ, id, pid, "app", ms), ev(rdma.EvDestroy, rdma.ResPD, id, pid, "app", ms))
	}
	return evs
}

// BenchmarkAdd is the cost of folding one event of a job's start and end
// in (figures in docs/benchmarks.md).
func BenchmarkAdd(b *testing.B) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	evs := burst(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.Add(&evs[i%len(evs)])
	}
}

func TestParseDelay(t *testing.T) {
	for in, want := range map[string]time.Duration{"1": time.Second, "0.5": 500 * time.Millisecond, "2s": 2 * time.Second, "250ms": 250 * time.Millisecond} {
		if got, err := ParseDelay(in); err != nil || got != want {
			t.Errorf("ParseDelay(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "0.01", "-1", "x", "NaN", "1e12"} {
		if _, err := ParseDelay(in); err == nil {
			t.Errorf("ParseDelay(%q): no error", in)
		}
	}
}
