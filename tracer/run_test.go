package tracer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// writeRecord is BPF that writes one zeroed device-register record of
// devSize bytes (a struct dev_event) to events (the stack holds it first).
func writeRecord(events *ebpf.Map) asm.Instructions {
	var insns asm.Instructions
	for off := int16(-devSize); off < 0; off += 4 {
		insns = append(insns, asm.StoreImm(asm.R10, off, 0, asm.Word))
	}
	return append(insns,
		asm.StoreImm(asm.R10, int16(-devSize+offKind), int64(cDevRegister), asm.Word),
		asm.LoadMapPtr(asm.R1, events.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(-devSize)),
		asm.Mov.Imm(asm.R3, int32(devSize)),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
	)
}

// flood returns a tracer whose ring of ringBytes gets one device-register
// record per system call of this process, from a raw tracepoint on
// sys_enter (the host has no RDMA, but has raw tracepoints), and starts a
// goroutine making system calls as fast as it can. Skips where BPF cannot
// be used.
func flood(t *testing.T, ringBytes uint32) *Tracer {
	t.Helper()
	events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: ringBytes})
	if err != nil {
		t.Skip("no BPF ring buffer here:", err)
	}
	t.Cleanup(func() { events.Close() })
	insns := asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, int32(os.Getpid()), "out"),
	}
	insns = append(insns, writeRecord(events)...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, Instructions: insns, License: "GPL"})
	if err != nil {
		t.Skip("cannot load a raw tracepoint program:", err)
	}
	t.Cleanup(func() { prog.Close() })
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: prog})
	if err != nil {
		t.Skip("cannot attach to sys_enter:", err)
	}
	t.Cleanup(func() { l.Close() })
	tr := &Tracer{}
	if err := tr.ring.open(events, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.ring.close)
	var stop atomic.Bool
	go func() {
		for !stop.Load() {
			syscall.Getppid()
		}
	}()
	t.Cleanup(func() { stop.Store(true) })
	return tr
}

// busy spends d on the CPU: a consumer slower than the producer.
func busy(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

func TestRunStopsUnderAFloodAfterWhatWasQueuedAtTheStop(t *testing.T) {
	const ringBytes = 1 << 16
	for _, tc := range []struct {
		name string
		cost time.Duration // per event
	}{{"fast consumer", 0}, {"consumer slower than the flood", 20 * time.Microsecond}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := flood(t, ringBytes)
			ctx, cancel := context.WithCancel(context.Background())
			var stopped atomic.Bool
			var before, after int
			var stoppedAt time.Time
			// Events are counted as after the stop once cancel has
			// returned: the stop cannot be earlier than that.
			time.AfterFunc(time.Second, func() { stoppedAt = time.Now(); cancel(); stopped.Store(true) })
			err := tr.Run(ctx, Consumer{Event: func(e *rdma.Event) error {
				if e.Kind != rdma.EvDevRegister {
					t.Fatalf("event of kind %v, want %v", e.Kind, rdma.EvDevRegister)
				}
				if stopped.Load() {
					after++
				} else {
					before++
				}
				busy(tc.cost)
				return nil
			}})
			took := time.Since(stoppedAt)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d events before the stop, %d after; Run returned %v after it", before, after, took)
			if before == 0 {
				t.Fatal("no events before the stop: no flood")
			}
			// At most what a full ring holds (each record has an 8-byte
			// header): Run must not follow the producer past the stop.
			// Run takes the stop itself within 64 events when
			// AfterFunc's goroutine is late on a busy host.
			if most := ringBytes/(devSize+8) + 64; after > most {
				t.Errorf("%d events delivered after the stop, more than the ring held (%d)", after, most)
			}
			// Before the fix, Run's predecessor never stopped (still
			// reading 5 s after the stop, 608 238 records later): the
			// count above catches that; the time only a hang, with room
			// for a loaded machine (790 ms once, under a load of 10).
			if took > 3*time.Second {
				t.Errorf("Run returned %v after the stop, want well under 3s", took)
			}
		})
	}
}

// filled returns a tracer whose ring holds n device-register records
// before Run starts and gets no more: from Run's side a flood, as the ring
// does not empty until it has read all n. A socket filter run n times
// (BPF_PROG_TEST_RUN, once a call) writes them. Skips where BPF cannot be
// used.
func filled(t *testing.T, n int) *Tracer {
	t.Helper()
	ringBytes := uint32(os.Getpagesize())
	for int(ringBytes) < n*(devSize+8) {
		ringBytes *= 2
	}
	events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: ringBytes})
	if err != nil {
		t.Skip("no BPF ring buffer here:", err)
	}
	t.Cleanup(func() { events.Close() })
	insns := append(writeRecord(events), asm.Mov.Imm(asm.R0, 0), asm.Return())
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, Instructions: insns, License: "GPL"})
	if err != nil {
		t.Skip("cannot load a socket filter that writes a ring buffer:", err)
	}
	defer prog.Close()
	packet := make([]byte, 64) // at least an Ethernet header
	for i := range n {
		// Repeat 1: exactly one run a call, even when a signal
		// interrupts it (a run repeated n times would start over).
		if _, err := prog.Run(&ebpf.RunOptions{Data: packet, Repeat: 1}); err != nil {
			if i == 0 {
				t.Skip("cannot test-run a socket filter:", err)
			}
			t.Fatal(err)
		}
	}
	tr := &Tracer{}
	if err := tr.ring.open(events, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.ring.close)
	if got, want := tr.ring.reader.AvailableBytes(), n*(devSize+8); got != want {
		t.Fatalf("the ring holds %d bytes, want %d records of %d", got, n, devSize+8)
	}
	return tr
}

// TestRunTicksUnderAFlood: Tick is called about every Every while events
// flow without a pause, not only when the ring empties. The ring holds n
// records before Run starts, and the test's clock moves step a delivered
// event: ticks are due every Every/step events of the flood, whatever the
// machine's load, and are counted against that.
func TestRunTicksUnderAFlood(t *testing.T) {
	const (
		n     = 64 * 80 // records: 512 ms of the test's clock
		step  = 100 * time.Microsecond
		every = 50 * time.Millisecond
		due   = int(n * step / every) // 10
	)
	tr := filled(t, n)
	start := time.Unix(1_000_000, 0)
	clock := start
	tr.tickNow = func() time.Time { return clock }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, idle := 0, -1
	var ticks []time.Duration // on the test's clock, from the start
	err := tr.Run(ctx, Consumer{
		Event: func(*rdma.Event) error {
			events++
			clock = clock.Add(step)
			if events == n {
				cancel() // everything queued is read: Run returns
			}
			return nil
		},
		Tick: func() { ticks = append(ticks, clock.Sub(start)) }, Every: every,
		Idle: func() {
			if idle < 0 {
				idle = events
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d ticks at %v, first idle after %d events", events, len(ticks), ticks, idle)
	if events != n {
		t.Fatalf("%d events delivered, the ring held %d", events, n)
	}
	if idle >= 0 && idle < n {
		t.Fatalf("the ring emptied after %d of %d events: not a flood", idle, n)
	}
	// Due at 50, 100, ... 500 ms of the clock; Run looks at the clock
	// every so many events, so a tick may come a little late, and one
	// lateness may push the last past the end.
	if len(ticks) < due-1 || len(ticks) > due {
		t.Errorf("%d ticks in %v of flood at %v, want %d (or %d)", len(ticks), time.Duration(n)*step, every, due, due-1)
	}
	var last time.Duration
	for i, at := range ticks {
		if gap := at - last; gap < every || gap >= 2*every {
			t.Errorf("tick %d came %v after the one before (or the start), want %v to %v", i+1, gap, every, 2*every)
		}
		last = at
	}
}

func TestRunIdleAndStopWithoutEvents(t *testing.T) {
	// No wall-clock counts: on a loaded machine 100 ms can hold two ticks
	// of 10 ms. With ticks, the third tick of an idle ring stops the run;
	// without, a stop after 100 ms. Either way Run must return once
	// stopped: without ticks it waits with no deadline, so only the stop
	// can wake it, and a Run that missed it would hang (10 s here).
	for _, every := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(fmt.Sprintf("ticks every %v", every), func(t *testing.T) {
			events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
			if err != nil {
				t.Skip("no BPF ring buffer here:", err)
			}
			defer events.Close()
			tr := &Tracer{}
			if err := tr.ring.open(events, nil); err != nil {
				t.Fatal(err)
			}
			defer tr.ring.close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ticks atomic.Int32
			stopped := make(chan struct{})
			var once sync.Once
			stop := func() { once.Do(func() { close(stopped); cancel() }) }
			if every == 0 {
				time.AfterFunc(100*time.Millisecond, stop)
			}
			var gotEvent atomic.Bool
			done := make(chan error, 1)
			go func() {
				done <- tr.Run(ctx, Consumer{
					Event: func(*rdma.Event) error { gotEvent.Store(true); return nil },
					Tick: func() {
						if ticks.Add(1) == 3 {
							stop()
						}
					},
					Every: every,
				})
			}()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d ticks at %v in 10 s while idle, want 3", ticks.Load(), every)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("an idle Run did not return within 10 s of the stop")
			}
			if gotEvent.Load() {
				t.Error("an event from an empty ring")
			}
		})
	}
}

func TestRunAllocatesNothingPerEvent(t *testing.T) {
	tr := flood(t, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	n := 0
	if err := tr.Run(ctx, Consumer{Event: func(*rdma.Event) error { n++; return nil }}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms1)
	allocs := ms1.Mallocs - ms0.Mallocs
	t.Logf("%d events, %d allocations", n, allocs)
	// A few for the context and the timers, none per event.
	if n < 1000 || float64(allocs)/float64(n) > 0.01 {
		t.Errorf("%d allocations for %d events", allocs, n)
	}
}

func TestRunStopsWithinStopDrainAndCountsWhatItLeftUnread(t *testing.T) {
	const ringBytes = 1 << 20 // about 3 000 records
	defer func(d time.Duration) { StopDrain = d }(StopDrain)
	StopDrain = 100 * time.Millisecond
	tr := flood(t, ringBytes)
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Bool
	var after int
	var stoppedAt time.Time
	time.AfterFunc(500*time.Millisecond, func() { stoppedAt = time.Now(); cancel(); stopped.Store(true) })
	// 1 ms an event: the full ring would take 3 s to deliver.
	err := tr.Run(ctx, Consumer{Event: func(*rdma.Event) error {
		if stopped.Load() {
			after++
		}
		busy(time.Millisecond)
		return nil
	}})
	took := time.Since(stoppedAt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events delivered after the stop, %d left unread; Run returned %v after it", after, tr.Unread(), took)
	if tr.Unread() == 0 {
		t.Error("nothing left unread: the ring was not full at the stop, or Run drained it all")
	}
	if most := ringBytes/(devSize+8) + 64; after+int(tr.Unread()) > most {
		t.Errorf("%d delivered and %d unread after the stop: more than the ring held (%d)", after, tr.Unread(), most)
	}
	// StopDrain and one batch of 64 events of 1 ms; a second of slack for
	// a shared machine. Before the bound: 3 s.
	if took > 1500*time.Millisecond {
		t.Errorf("Run returned %v after the stop, want about StopDrain (%v)", took, StopDrain)
	}
}

// TestRunYieldsUnderAFlood: while the ring never empties, Run yields
// often enough that Go's scheduler does not preempt it with a signal
// (SIGURG, after 10 ms of running), which under the emulator cost the
// reader a quarter of its CPU. The ring holds 400 ms of records for a
// consumer spending 20 µs each; the runtime's preemption signals are
// counted (signal.Notify receives them too).
func TestRunYieldsUnderAFlood(t *testing.T) {
	const n = 20000
	tr := filled(t, n)
	// A GC cycle may preempt with a signal too: none during the test.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	urg := make(chan os.Signal, 4*n)
	signal.Notify(urg, syscall.SIGURG)
	defer signal.Stop(urg)
	start := time.Now()
	got := 0
	err := tr.Run(context.Background(), Consumer{Event: func(*rdma.Event) error {
		busy(20 * time.Microsecond)
		if got++; got == n {
			return errDone
		}
		return nil
	}})
	took := time.Since(start)
	signal.Stop(urg)
	if !errors.Is(err, errDone) {
		t.Fatalf("Run: %v after %d of %d events", err, got, n)
	}
	t.Logf("%d events in %v, %d preemption signals", n, took, len(urg))
	// Before the fix, one every 20 ms or so; after, a few where the
	// host's load stalls the reader's thread past 10 ms.
	if most := int(took / (50 * time.Millisecond)); len(urg) > most {
		t.Errorf("%d preemption signals while Run read %d events for %v, more than one every 50 ms: it does not yield", len(urg), n, took)
	}
}

var errDone = errors.New("done")
