package rdma

import "testing"

// A span's and an off-CPU spell's lengths are each their own part's: an
// event of one kind never reads the other's, and an instant event has none
// whatever its parts hold.
func TestLengthAndEndAreTheKindsOwn(t *testing.T) {
	parts := func(k EventKind) Event {
		return Event{Mono: 1000, Kind: k, Flags: EvHasDur, Span: Span{Func: "ib_umem_get", Dur: 5}, OffCPU: OffCPU{Dur: 7}}
	}
	for _, c := range []struct {
		kind EventKind
		len  uint64
	}{{EvSpan, 5}, {EvOffCPU, 7}, {EvCreate, 0}, {EvPortBusy, 0}} {
		e := parts(c.kind)
		if got := e.Length(); got != c.len {
			t.Errorf("%s: length %d, want %d", c.kind, got, c.len)
		}
		if got := e.End(); got != 1000+c.len {
			t.Errorf("%s: end %d, want %d", c.kind, got, 1000+c.len)
		}
	}
}

// The rdma cgroup that refused a create, read when the event came, is
// named with its rdma.max and rdma.current: the sentence.
func TestCallFailWhyNamesTheCgroup(t *testing.T) {
	e := &Event{Kind: EvCallFail, Flags: EvHasDev, Resource: Resource{DevName: "rxe0"}}
	e.CallFail = CallFail{Op: "create_cq", Errno: 11, Limit: CallLimit{Kind: LimitRDMACgroup, CgroupRes: "hca_object",
		Cgroup: &RDMACgroupUse{Path: "/kubepods/pod-b", Max: 100, Current: 100}}}
	f, ok := e.Failure()
	if want := "create_cq failed (EAGAIN): rdma cgroup /kubepods/pod-b's rdma.max hca_object=100, 100 in use on rxe0"; !ok || f.Why != want || f.What != "create-failed" {
		t.Errorf("got %+v, want %q", f, want)
	}
}
