package tracer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// recordWriter is a raw_tp program that writes one zeroed record of size
// bytes to events, with the 32-bit fields at the given offsets set.
func recordWriter(t *testing.T, events *ebpf.Map, size int, fields map[int]int32) *ebpf.Program {
	t.Helper()
	var insns asm.Instructions
	for off := int16(-size); off < 0; off += 4 {
		insns = append(insns, asm.StoreImm(asm.R10, off, 0, asm.Word))
	}
	for off, v := range fields {
		insns = append(insns, asm.StoreImm(asm.R10, int16(-size+off), int64(v), asm.Word))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, events.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(-size)),
		asm.Mov.Imm(asm.R3, int32(size)),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, Instructions: insns, License: "GPL"})
	if err != nil {
		t.Skip("cannot load a raw tracepoint program:", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPortBusyNamingIsOffTheReadersPath: while who holds a port-busy
// event's port is being looked up (here, a lookup that takes until the
// test lets it go), the lifecycle events read after it are delivered; the
// port-busy event follows once named, with its holders. Before, the
// lookup ran on the reader's path: nothing was delivered until it
// returned, which a user with 120 000 open files made take seconds per
// event (the review's 52 of 2 402 events shown).
func TestPortBusyNamingIsOffTheReadersPath(t *testing.T) {
	events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		t.Skip("no BPF ring buffer here:", err)
	}
	t.Cleanup(func() { events.Close() })
	busyRec := recordWriter(t, events, portBusySize, map[int]int32{
		offKind: int32(cPortBusy),
		int(unsafe.Offsetof(bpf.RdmatracePortBusyEvent{}.Op)): int32(bpf.RdmatracePortOpPORT_INET_BIND),
	})
	devRec := recordWriter(t, events, devSize, map[int]int32{offKind: int32(cDevRegister)})

	release := make(chan struct{})
	var lookups atomic.Int32
	x := enrich.New(enrich.Options{}).Then(enrich.PortHolders(func(*rdma.Event) []string {
		lookups.Add(1)
		<-release
		return []string{"holder[1] tcp LISTEN 0.0.0.0:7400"}
	}))
	tr := &Tracer{}
	if err := tr.ring.open(events, x); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.ring.close)
	const devs = 100
	if _, err := busyRec.Run(&ebpf.RunOptions{}); err != nil {
		t.Skip("BPF_PROG_TEST_RUN of a raw tracepoint program:", err)
	}
	for range devs {
		if _, err := devRec.Run(&ebpf.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var order []rdma.EventKind
	var holders []string
	released := false
	let := func() {
		if !released {
			released = true
			close(release)
		}
	}
	// Whatever happens, the lookup is let go after 2 s, and the run stops
	// 1 s later.
	timer := time.AfterFunc(2*time.Second, func() { let(); time.AfterFunc(time.Second, cancel) })
	defer timer.Stop()
	err = tr.Run(ctx, Consumer{Event: func(e *rdma.Event) error {
		order = append(order, e.Kind)
		if e.Kind == rdma.EvPortBusy {
			holders = e.PortBusy.Holders
			cancel()
		}
		if len(order) == devs && !released {
			timer.Stop()
			let()
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != devs+1 {
		t.Fatalf("%d events delivered, want %d: %v", len(order), devs+1, order)
	}
	if order[0] == rdma.EvPortBusy || order[devs] != rdma.EvPortBusy {
		t.Errorf("the port-busy event came at %v, want last: the %d lifecycle events read after it were to come while its holders were looked up", order, devs)
	}
	if len(holders) != 1 || lookups.Load() != 1 {
		t.Errorf("holders %q after %d lookups, want the one holder, looked up once", holders, lookups.Load())
	}
}

// TestNamerBudget: the namer takes namerBurst events at once, then
// namerRate a second; an event beyond that is named at once without its
// lookup (holders nil: not looked up) and counted. At the stop's deadline,
// what is still waiting is delivered the same way, in the order taken.
func TestNamerBudget(t *testing.T) {
	release := make(chan struct{})
	n := newNamer(func(e *rdma.Event) {
		if e.Kind == rdma.EvPortBusy && e.PortBusy.Holders == nil {
			<-release
			e.PortBusy.Holders = []string{"x"}
		}
	}, func() {})
	defer n.close()
	now := time.Unix(1000, 0)
	n.now = func() time.Time { return now }
	ev := rdma.Event{Kind: rdma.EvPortBusy}
	took := 0
	for i := 0; i < 2*namerBurst; i++ {
		ev.Status = int32(i)
		if n.take(&ev) {
			took++
		} else if ev.PortBusy.Holders != nil {
			t.Fatalf("event %d over the budget has holders %q, want nil (not looked up)", i, ev.PortBusy.Holders)
		}
	}
	if took != namerBurst || n.skipped.Load() != namerBurst {
		t.Errorf("took %d, skipped %d of %d at once, want %d and %d", took, n.skipped.Load(), 2*namerBurst, namerBurst, namerBurst)
	}
	now = now.Add(time.Second / namerRate)
	if !n.take(&ev) {
		t.Errorf("a lookup's interval later: not taken, want taken")
	}
	// The stop: nothing named by the deadline. Everything taken comes
	// back in order, unnamed, and counted.
	var got []int32
	err := n.drain(time.Now().Add(50*time.Millisecond), func(e *rdma.Event) error {
		if e.PortBusy.Holders != nil {
			t.Errorf("event %d delivered at the deadline with holders %q, want nil", e.Status, e.PortBusy.Holders)
		}
		got = append(got, e.Status)
		return nil
	})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != namerBurst+1 || got[0] != 0 || got[namerBurst] != int32(2*namerBurst-1) {
		t.Errorf("delivered at the stop %v, want the %d taken in order", got, namerBurst+1)
	}
	if n.skipped.Load() != 2*namerBurst+1 {
		t.Errorf("skipped %d, want %d", n.skipped.Load(), 2*namerBurst+1)
	}
}
