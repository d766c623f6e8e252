package tracer

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// joinOnly is a CallSites without probes: records are fed to it by hand.
// Its /proc has no process, so each stack is its call site as an address.
func joinOnly(t *testing.T) *CallSites {
	c := newCallSites(t.TempDir())
	c.done = true // no reader to wait for
	t.Cleanup(c.sym.Close)
	return c
}

func enterAt(c *CallSites, tid uint32, ts, sp, ret uint64) {
	e := bpf.CallsiteCallsiteEntry{Ret: ret}
	e.H = bpf.CallsiteCallsiteHdr{Ts: ts, Sp: sp, Pid: 4000000, Tid: tid, Kind: uint32(bpf.CallsiteCallsiteKindCALLSITE_ENTER)}
	c.record(unsafe.Slice((*byte)(unsafe.Pointer(&e)), unsafe.Sizeof(e)))
}

func exitAt(c *CallSites, tid uint32, ts, sp uint64) {
	h := bpf.CallsiteCallsiteHdr{Ts: ts, Sp: sp, Pid: 4000000, Tid: tid, Kind: uint32(bpf.CallsiteCallsiteKindCALLSITE_EXIT)}
	c.record(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unsafe.Sizeof(h)))
}

// site is the call site an event was given: its return address (the
// frame is an address alone here), 0 for none.
func site(c *CallSites, e rdma.Event) uint64 {
	c.Annotate(&e)
	if e.Stack == nil {
		return 0
	}
	return e.Stack.Site().Offset
}

func TestACreateJoinsTheOutermostCallItsThreadWasIn(t *testing.T) {
	c := joinOnly(t)
	pop := uint64(8) // what a return adds to the stack pointer
	if runtime.GOARCH != "amd64" {
		pop = 0
	}
	// rdma_create_qp (ret 0xa, sp 1000) calls ibv_create_qp (ret 0xb, sp 900).
	enterAt(c, 7, 10, 1000, 0xa)
	enterAt(c, 7, 20, 900, 0xb)
	exitAt(c, 7, 30, 900+pop)
	exitAt(c, 7, 40, 1000+pop)
	create := func(tid uint32, at uint64) rdma.Event {
		return rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvUser, Resource: rdma.Resource{Type: rdma.ResQP}, Actor: rdma.Owner{TID: tid}, Mono: at}
	}
	for _, tc := range []struct {
		name string
		e    rdma.Event
		want uint64
	}{
		{"inside both calls: the outer one's", create(7, 25), 0xa},
		{"after the inner call returned, inside the outer", create(7, 35), 0xa},
		{"after both returned", create(7, 45), 0},
		{"before either", create(7, 5), 0},
		{"another thread", create(8, 25), 0},
		{"a kernel object", rdma.Event{Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResQP}, Actor: rdma.Owner{TID: 7}, Mono: 25}, 0},
	} {
		if got := site(c, tc.e); got != tc.want {
			t.Errorf("%s: call site 0x%x, want 0x%x", tc.name, got, tc.want)
		}
	}
}

// A longjmp out of a probed call never returns it: the return of a call
// further out ends it too.
func TestAReturnFurtherOutEndsTheCallsInside(t *testing.T) {
	c := joinOnly(t)
	enterAt(c, 7, 10, 1000, 0xa)
	enterAt(c, 7, 20, 900, 0xb) // left by a longjmp
	exitAt(c, 7, 40, 1008)
	e := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvUser, Actor: rdma.Owner{TID: 7}, Mono: 50}
	if got := site(c, e); got != 0 {
		t.Errorf("after the outer return: call site 0x%x, want none", got)
	}
}

// An rdma_cm ID is created unbound in rdma_create_id and tracked by
// restrack when it is bound, later, outside any probed call: it keeps the
// stack of its creation.
func TestAnRdmaCMIDKeepsItsCreationsStackWhenBound(t *testing.T) {
	c := joinOnly(t)
	enterAt(c, 7, 10, 1000, 0xc)
	exitAt(c, 7, 20, 1008)
	id := rdma.Event{Kind: rdma.EvCMIDCreate, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff1, Actor: rdma.Owner{TID: 7}, Mono: 15}
	bound := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvUser, Resource: rdma.Resource{Type: rdma.ResCMID}, Obj: 0xffff1, Actor: rdma.Owner{TID: 7}, Mono: 30}
	other := bound
	other.Obj = 0xffff2
	if got := site(c, id); got != 0xc {
		t.Fatalf("rdma_create_id: call site 0x%x, want 0xc", got)
	}
	if got := site(c, other); got != 0 {
		t.Errorf("another ID bound: call site 0x%x, want none", got)
	}
	if got := site(c, bound); got != 0xc {
		t.Errorf("the ID bound: call site 0x%x, want its creation's 0xc", got)
	}
}
