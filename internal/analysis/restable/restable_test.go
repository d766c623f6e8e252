package restable

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// ev builds a resource event at ms milliseconds.
func ev(kind rdma.EventKind, res rdma.ResType, id uint32, ms int) rdma.Event {
	e := rdma.Event{Kind: kind, Resource: rdma.Resource{Type: res, DevIndex: 1, DevName: "rxe0", Owner: rdma.Owner{PID: 100, TID: 100, Comm: "rping"}}, ID: id, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser,
		Mono: uint64(ms) * uint64(time.Millisecond), Time: t0.Add(time.Duration(ms) * time.Millisecond)}
	if res == rdma.ResQP {
		e.LQPN, e.QPType, e.ID = id, rdma.QPTypeRC, 0
		e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
	}
	if kind == rdma.EvModify {
		e.SetState(uint8(rdma.QPStateInit))
	}
	return e
}

func TestLifecycle(t *testing.T) {
	tab := New(10)
	steps := []struct {
		e    rdma.Event
		want Op
		len  int
	}{
		{ev(rdma.EvCreate, rdma.ResQP, 17, 1), OpAdded, 1},
		{ev(rdma.EvCreate, rdma.ResPD, 3, 2), OpAdded, 2},
		{ev(rdma.EvModify, rdma.ResQP, 17, 3), OpUpdated, 2},
		{ev(rdma.EvDestroyBegin, rdma.ResQP, 17, 4), OpUpdated, 2},
		{ev(rdma.EvDestroyAbort, rdma.ResQP, 17, 5), OpUpdated, 2},
		{ev(rdma.EvDestroyBegin, rdma.ResQP, 17, 6), OpUpdated, 2},
		{ev(rdma.EvDestroy, rdma.ResQP, 17, 7), OpRemoved, 1},
		{ev(rdma.EvDestroy, rdma.ResQP, 17, 8), OpNone, 1}, // twice: unknown now
		{ev(rdma.EvDestroy, rdma.ResMR, 9, 9), OpNone, 1},  // never seen
	}
	for i, s := range steps {
		op, _ := tab.Apply(&s.e)
		if op != s.want || tab.Len() != s.len {
			t.Errorf("step %d (%v %v): op %v len %d, want op %v len %d", i, s.e.Kind, s.e.Type, op, tab.Len(), s.want, s.len)
		}
	}
}

func TestQPStateAndDestroying(t *testing.T) {
	tab := New(10)
	c := ev(rdma.EvCreate, rdma.ResQP, 17, 1)
	tab.Apply(&c)
	m := ev(rdma.EvModify, rdma.ResQP, 17, 2)
	m.SetState(uint8(rdma.QPStateRTS))
	tab.Apply(&m)
	b := ev(rdma.EvDestroyBegin, rdma.ResQP, 17, 3)
	_, ent := tab.Apply(&b)
	if ent.Res.QPState != rdma.QPStateRTS || !ent.Destroying || !ent.Created.Equal(c.Time) {
		t.Errorf("entry %+v: want state RTS, destroying, created at the create", ent)
	}
}

func TestGSIQPsOfTwoPortsAreTwoResources(t *testing.T) {
	tab := New(10)
	for port := uint32(1); port <= 2; port++ {
		e := ev(rdma.EvCreate, rdma.ResQP, 1, int(port))
		e.QPType, e.Port, e.Resource.Has = rdma.QPTypeGSI, port, e.Resource.Has|rdma.HasPort
		if op, _ := tab.Apply(&e); op != OpAdded {
			t.Fatalf("GSI QP of port %d: %v", port, op)
		}
	}
	if tab.Len() != 2 {
		t.Errorf("len %d, want 2", tab.Len())
	}
}

func TestFullTableCountsUntracked(t *testing.T) {
	tab := New(2)
	for i := uint32(1); i <= 5; i++ {
		e := ev(rdma.EvCreate, rdma.ResCQ, i, int(i))
		tab.Apply(&e)
	}
	if tab.Len() != 2 || tab.Untracked() != 3 {
		t.Errorf("len %d untracked %d, want 2 and 3", tab.Len(), tab.Untracked())
	}
	d := ev(rdma.EvDestroy, rdma.ResCQ, 1, 6)
	tab.Apply(&d)
	e := ev(rdma.EvCreate, rdma.ResCQ, 9, 7)
	if op, _ := tab.Apply(&e); op != OpAdded {
		t.Errorf("after a destroy there is room again: %v", op)
	}
}

func TestReusedIDReplaces(t *testing.T) {
	tab := New(10)
	a := ev(rdma.EvCreate, rdma.ResCQ, 4, 1)
	b := ev(rdma.EvCreate, rdma.ResCQ, 4, 5) // the destroy of a was lost
	b.Owner = rdma.Owner{PID: 200, TID: 200, Comm: "other"}
	tab.Apply(&a)
	op, ent := tab.Apply(&b)
	if op != OpReplaced || ent.Res.Owner.PID != 200 || tab.Replaced() != 1 {
		t.Errorf("op %v owner %d replaced %d, want OpReplaced, 200, 1", op, ent.Res.Owner.PID, tab.Replaced())
	}
}

func TestSnapshotThenTracedCreateIsOneResource(t *testing.T) {
	tab := New(10)
	x := ev(rdma.EvExists, rdma.ResPD, 3, 10)
	c := ev(rdma.EvCreate, rdma.ResPD, 3, 5) // traced between attach and snapshot
	tab.Apply(&x)
	op, ent := tab.Apply(&c)
	if op != OpAdded || tab.Replaced() != 0 || ent.PreExisting || !ent.Created.Equal(c.Time) {
		t.Errorf("op %v replaced %d entry %+v", op, tab.Replaced(), ent)
	}
	x2 := ev(rdma.EvExists, rdma.ResPD, 3, 11)
	if op, _ := tab.Apply(&x2); op != OpNone {
		t.Errorf("a snapshot of a traced resource: %v, want OpNone", op)
	}
}

func TestUnboundCMIDThenBound(t *testing.T) {
	tab := New(10)
	u := rdma.Event{Kind: rdma.EvCMIDCreate, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff1, Flags: rdma.EvHasRes | rdma.EvHasOwner}
	if op, _ := tab.Apply(&u); op != OpAdded {
		t.Fatalf("unbound cm_id: %v", op)
	}
	b := ev(rdma.EvCreate, rdma.ResCMID, 7, 2)
	b.Obj = 0xffff1
	tab.Apply(&b)
	if tab.Len() != 1 {
		t.Fatalf("bound: len %d, want 1 (the unbound entry replaced)", tab.Len())
	}
	d := ev(rdma.EvCMIDDestroy, rdma.ResCMID, 7, 3)
	if op, _ := tab.Apply(&d); op != OpNone || tab.Len() != 1 {
		t.Errorf("cm_id_destroy of a bound ID leaves it to restrack del: %v", op)
	}
	r := ev(rdma.EvDestroy, rdma.ResCMID, 7, 4)
	if op, _ := tab.Apply(&r); op != OpRemoved || tab.Len() != 0 {
		t.Errorf("restrack del: %v len %d", op, tab.Len())
	}
	u2 := rdma.Event{Kind: rdma.EvCMIDCreate, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff2}
	tab.Apply(&u2)
	d2 := rdma.Event{Kind: rdma.EvCMIDDestroy, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff2}
	if op, _ := tab.Apply(&d2); op != OpRemoved {
		t.Errorf("cm_id_destroy of an unbound ID: %v", op)
	}
}

// TestUnboundListenerIsOnNoDevice: device index 0 is a real device (the
// first one, rxe0's "ifindex":0). A wildcard listener bound to no device
// is kept apart from it: removing device 0 takes its QP and its bound
// cm_id, not the listener, which the table still holds afterwards.
func TestUnboundListenerIsOnNoDevice(t *testing.T) {
	tab := New(10)
	qp := ev(rdma.EvCreate, rdma.ResQP, 17, 1)
	bound := ev(rdma.EvCreate, rdma.ResCMID, 3, 2)
	for _, e := range []*rdma.Event{&qp, &bound} {
		e.DevIndex = 0
		tab.Apply(e)
	}
	listener := rdma.Event{Kind: rdma.EvCMIDCreate, Resource: rdma.Resource{Type: rdma.ResCMID, Owner: rdma.Owner{KernName: "nvmet_rdma"}}, Obj: 0xffff1, Time: t0.Add(3 * time.Millisecond),
		Flags: rdma.EvHasRes}
	op, ent := tab.Apply(&listener)
	if op != OpAdded || ent.Dev != NoDevice || ent.Bound() {
		t.Fatalf("unbound listener: op %v key %+v, want OpAdded on NoDevice", op, ent.Key)
	}
	if k, _ := KeyOf(&listener); k.Dev == 0 {
		t.Errorf("KeyOf(unbound cm_id) = %+v: device 0 is rxe0", k)
	}
	on0 := tab.Select(func(e *Entry) bool { return e.Dev == 0 })
	if len(on0) != 2 {
		t.Errorf("device 0 holds %d entries, want its QP and bound cm_id", len(on0))
	}
	gone := tab.RemoveDevice(0)
	if len(gone) != 2 || tab.Len() != 1 {
		t.Fatalf("RemoveDevice(0) took %d, left %d: want the QP and the bound cm_id taken, the listener left", len(gone), tab.Len())
	}
	for _, e := range gone {
		if !e.Bound() {
			t.Errorf("RemoveDevice(0) took the unbound listener %+v", e.Key)
		}
	}
	if n := len(tab.RemoveDevice(NoDevice)); n != 0 {
		t.Errorf("RemoveDevice(NoDevice) took %d entries: no device goes away", n)
	}
	// rdma_listen on no device puts the listener itself in LISTEN, not a
	// device-0 entry; so does a bound ID's (a per-device child's).
	listen := rdma.Event{Kind: rdma.EvCMListen, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff1, Flags: rdma.EvHasRes}
	listen.SetState(uint8(rdma.CMListen))
	if op, ent := tab.Apply(&listen); op != OpUpdated || ent.Res.CMState != rdma.CMListen {
		t.Errorf("rdma_listen of the unbound listener: %v %+v, want its entry in LISTEN", op, ent)
	}
	d := rdma.Event{Kind: rdma.EvCMIDDestroy, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff1}
	if op, _ := tab.Apply(&d); op != OpRemoved || tab.Len() != 0 {
		t.Errorf("rdma_destroy_id of the listener: %v, len %d", op, tab.Len())
	}
}

func TestRemoveDeviceAndSelectAreSorted(t *testing.T) {
	tab := New(10)
	for _, e := range []rdma.Event{ev(rdma.EvCreate, rdma.ResQP, 30, 1), ev(rdma.EvCreate, rdma.ResPD, 2, 2), ev(rdma.EvCreate, rdma.ResCQ, 5, 3)} {
		tab.Apply(&e)
	}
	k := ev(rdma.EvCreate, rdma.ResPD, 1, 4)
	k.Flags &^= rdma.EvHasOwner | rdma.EvUser
	k.Owner = rdma.Owner{KernName: "ib_core"}
	tab.Apply(&k)
	other := ev(rdma.EvCreate, rdma.ResPD, 1, 5)
	other.DevIndex, other.DevName = 2, "rxe1"
	tab.Apply(&other)
	gone := tab.RemoveDevice(1)
	var got []string
	for _, e := range gone {
		got = append(got, e.Res.Type.String()+"/"+e.Res.Owner.Comm+e.Res.Owner.KernName)
	}
	want := []string{"pd/rping", "cq/rping", "qp/rping", "pd/ib_core"}
	if len(got) != len(want) {
		t.Fatalf("removed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("removed %v, want %v", got, want)
			break
		}
	}
	if tab.Len() != 1 {
		t.Errorf("the other device's entry went too: len %d", tab.Len())
	}
}

func TestReorderReleasesInTimestampOrder(t *testing.T) {
	r := NewReorder(uint64(10 * time.Millisecond))
	var out []uint64
	collect := func(e *rdma.Event) { out = append(out, e.Mono/uint64(time.Millisecond)) }
	push := func(ms int) {
		e := ev(rdma.EvCreate, rdma.ResPD, 1, ms)
		r.Push(&e, collect)
	}
	// Within the window, a late event takes its place: 2 before 3, 11
	// before 12. At 12, what is 10 ms older (up to 2) goes.
	for _, ms := range []int{1, 3, 2, 12, 11} {
		push(ms)
	}
	if want := "[1 2]"; fmt.Sprint(out) != want {
		t.Errorf("released at 12: %v, want %s", out, want)
	}
	push(25)
	if want := "[1 2 3 11 12]"; fmt.Sprint(out) != want {
		t.Errorf("released at 25: %v, want %s", out, want)
	}
	// Later than the window, an event cannot be put back: it goes at once.
	push(4)
	r.Flush(collect)
	if want := "[1 2 3 11 12 4 25]"; fmt.Sprint(out) != want || r.Len() != 0 {
		t.Errorf("after flush: %v (held %d), want %s", out, r.Len(), want)
	}
	out = nil
	for _, ms := range []int{40, 31, 35} {
		push(ms)
	}
	r.FlushUntil(uint64(35*time.Millisecond), collect)
	if want := "[31 35]"; fmt.Sprint(out) != want || r.Len() != 1 {
		t.Errorf("FlushUntil 35: %v (held %d), want %s and 40 held", out, r.Len(), want)
	}
}
