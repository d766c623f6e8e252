package tracer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestOffCPUSpellsOfAFollowedProcess runs on the host, which has the
// scheduler tracepoints but no RDMA: the tracer follows this test's own
// process, a locked thread sleeps 30 ms three times, and each sleep must
// come back as one off-cpu event of that thread, not preempted, lasting
// about the sleep, naming the task that ran instead. Both the tp_btf
// variant and the raw_tp fallback. The thread is SCHED_FIFO and sleeps in
// nanosleep: on a machine busy with compilers, a thread of the fair class
// sleeping on a Go timer was preempted for 25 ms and more between its
// sleeps, or had a sleep come back as two spells.
func TestOffCPUSpellsOfAFollowedProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	for _, fallback := range []bool{false, true} {
		name := map[bool]string{false: "tp_btf", true: "raw_tp"}[fallback]
		t.Run(name, func(t *testing.T) {
			tr, err := Open(Options{RingBytes: 1 << 20, Fallback: fallback, Follow: []uint32{uint32(os.Getpid())}})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for _, r := range tr.Reports {
				if (r.Hook == "sched:sched_switch" || r.Hook == "sched:sched_wakeup") && r.Variant != name {
					t.Fatalf("%s attached as %q, want %s (%s)", r.Hook, r.Variant, name, r.Reason)
				}
			}
			tid := make(chan int, 1)
			fifo := make(chan error, 1)
			// Each sleep's spell is the first of the thread's to begin
			// within its call: the thread may also be off CPU after the
			// call, waiting in the Go runtime for a P to run on (52 ms
			// once on a busy machine), which is no sleep of ours.
			var calls [3][2]uint64
			go func() {
				// Never unlocked: the real-time thread ends with the
				// goroutine, and serves no other.
				runtime.LockOSThread()
				// SCHED_FIFO: woken, the sleeper runs at once, and no
				// task of a busy machine's preempts it between its
				// sleeps (a spell of 25 ms or more that would be
				// preempted). Reset on fork: a thread the runtime starts
				// from this one is not real-time.
				err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0)
				fifo <- err
				if err != nil {
					return
				}
				tid <- gettid()
				for i := range calls {
					calls[i][0] = Mono()
					sleep(30 * time.Millisecond) // in the kernel: one spell a sleep
					calls[i][1] = Mono()
				}
				tid <- 0
			}()
			if err := <-fifo; err != nil {
				t.Skip("the sleeper cannot be a SCHED_FIFO thread here:", err)
			}
			sleeper := <-tid
			<-tid
			var all []rdma.Event // the thread's spells during its sleeps
			// The reader is in the followed process too: its own spells
			// keep coming, so read until a deadline, not until quiet.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			err = tr.Run(ctx, Consumer{Event: func(ev *rdma.Event) error {
				if ev.Kind == rdma.EvOffCPU && int(ev.Owner.TID) == sleeper && ev.Mono >= calls[0][0] && ev.Mono <= calls[2][1] {
					all = append(all, *ev)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			var spells []rdma.Event
			for i, c := range calls {
				var first *rdma.Event
				for j := range all {
					if s := &all[j]; s.Mono >= c[0] && s.Mono <= c[1] && (first == nil || s.Mono < first.Mono) {
						first = s
					}
				}
				if first == nil {
					t.Errorf("sleep %d (+%.2f ms, %.2f ms): no off-cpu spell of thread %d began in it", i+1,
						float64(c[0]-calls[0][0])/1e6, float64(c[1]-c[0])/1e6, sleeper)
					continue
				}
				spells = append(spells, *first)
			}
			if len(spells) < 3 {
				t.FailNow()
			}
			for i, s := range spells {
				// One spell a sleep: not cut short, nor preempted.
				if s.Owner.PID != uint32(os.Getpid()) || s.Has(rdma.EvPreempted) || s.OffCPU.Dur < 25e6 || s.OffCPU.Dur > 200e6 || !s.Has(rdma.EvHasDur) {
					for _, s := range all {
						t.Logf("spell at +%.2f ms: %.2f ms, preempted %v, woken %d µs before it ran, %s[%d] ran instead",
							float64(s.Mono-calls[0][0])/1e6, float64(s.OffCPU.Dur)/1e6, s.Has(rdma.EvPreempted), s.OffCPU.Wait/1000, s.OffCPU.Next.Comm, s.OffCPU.Next.TID)
					}
					t.Errorf("sleep %d of 30 ms: a spell of %.2f ms of pid %d, preempted %v: want pid %d, asleep (not preempted), 25-200 ms",
						i+1, float64(s.OffCPU.Dur)/1e6, s.Owner.PID, s.Has(rdma.EvPreempted), os.Getpid())
				}
				if s.OffCPU.Next.Comm == "" {
					t.Errorf("spell %+v: names no task that ran instead", s)
				}
				if s.OffCPU.Wait > s.OffCPU.Dur {
					t.Errorf("spell of %d ns: wait from wakeup %d ns, want wait <= dur", s.OffCPU.Dur, s.OffCPU.Wait)
				}
			}
			// A wakeup is seen for most spells (not all: measured, about one
			// in ten under load shows none).
			woken := 0
			for _, s := range spells {
				if s.OffCPU.Wait > 0 {
					woken++
				}
			}
			if woken == 0 {
				t.Errorf("no spell saw its wakeup (sched_wakeup)")
			}
			t.Logf("%s: %d spells, e.g. %.1f ms off CPU, %d µs from wakeup to run, %s[%d] ran instead",
				name, len(spells), float64(spells[0].OffCPU.Dur)/1e6, spells[0].OffCPU.Wait/1000, spells[0].OffCPU.Next.Comm, spells[0].OffCPU.Next.TID)
		})
	}
}

func gettid() int { return unix.Gettid() }

// runnersEnv makes the test binary the helper of
// TestOffCPUNamesTheLongestRunner (TestMain): a thread that spins on one
// CPU, and three real-time threads that take that CPU for 3, 60 and 3 ms
// in a row.
const runnersEnv = "RDMATRACE_TEST_RUNNERS_CPU"

// noRealTime is the helper's exit status when it cannot have what it
// needs (CPU affinity, SCHED_FIFO): the test skips, saying why.
const noRealTime = 3

func TestMain(m *testing.M) {
	if cpu, ok := os.LookupEnv(runnersEnv); ok {
		os.Exit(runRunners(cpu))
	}
	os.Exit(m.Run())
}

// nanotime is the runtime's clock. It is nosplit: a loop that calls it
// gives the Go scheduler no point to preempt it at, where time.Now would.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// realTime pins the calling thread to cpu and makes it SCHED_FIFO at
// prio, named name. Reset on fork: a thread the Go runtime starts from
// this one is not real-time (its CPU is still this one).
func realTime(name string, cpu int, prio uint32) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("%s: affinity: %w", name, err)
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: prio, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0); err != nil {
		return fmt.Errorf("%s: SCHED_FIFO %d: %w", name, prio, err)
	}
	return unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&append([]byte(name), 0)[0])), 0, 0, 0)
}

// sleep sleeps in the kernel, not on a Go timer: the thread wakes by
// itself, with no other thread of the runtime to run the timer.
func sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// runRunners runs, with GODEBUG=asyncpreemptoff=1 and no GC, so that the
// Go runtime never stops a spinning thread to reschedule it (a locked
// thread then sleeps until another thread hands its goroutine back: a
// spell cut in two, or a sleep instead of a preemption). Every thread of
// the run is SCHED_FIFO, so that no task of the machine's but
// higher-priority real-time ones (the kernel's own, which run briefly)
// can take cpu while it is ours, nor delay the waker on the other CPU
// (a busy machine's compilers did both: spells that named clang, or
// spells split in two):
//   - spinner, pinned to cpu at priority 1, blocked on a pipe until the
//     waker starts it, then spinning until the end; the helper prints
//     "spinner TID" and waits for a line on stdin before starting it;
//   - first, hog and last, pinned to cpu at priorities 4, 3 and 2, each
//     blocked on a pipe, then woken at once from another CPU by the
//     waker (the main thread, priority 5 there). The highest runs first:
//     spinner's spell sees first (3 ms), hog (60 ms), last (3 ms).
//
// Pipes and nanosleep, not channels and Go timers, carry the run: a
// thread of the runtime's that is not real-time (one it started, on cpu)
// is then never waited for.
func runRunners(cpuArg string) int {
	var cpu int
	if _, err := fmt.Sscan(cpuArg, &cpu); err != nil {
		return 2
	}
	debug.SetGCPercent(-1)
	// A P for each spinning thread and for the waker: with as many Ps as
	// CPUs, the waker's write of hog's pipe waited for first to end.
	runtime.GOMAXPROCS(8)
	runtime.LockOSThread() // the waker stays off cpu
	// Every thread the process has yet, and those they start, off cpu:
	// there, a thread of ours preempted as the run begins, and left
	// waiting, would hold cpu's slot, and the spinner's spell would keep
	// its first runner. (The runtime starts the threads that locked
	// goroutines need from its template thread, off cpu too.)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var off unix.CPUSet
	off.Set(1 - cpu)
	for _, task := range tasks {
		var tid int
		fmt.Sscan(task.Name(), &tid)
		if err := unix.SchedSetaffinity(tid, &off); err != nil && err != unix.ESRCH {
			fmt.Fprintln(os.Stderr, "affinity of thread", tid, err)
			return noRealTime
		}
	}
	if err := realTime("waker", 1-cpu, 5); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return noRealTime
	}
	var quit atomic.Uint32
	type runner struct {
		name string
		prio uint32
		spin time.Duration
		fds  [2]int // the waker writes [1], the runner waits on [0]
	}
	spinner := &runner{name: "spinner", prio: 1}
	rs := []*runner{{name: "first", prio: 4, spin: 3 * time.Millisecond}, {name: "hog", prio: 3, spin: 60 * time.Millisecond}, {name: "last", prio: 2, spin: 3 * time.Millisecond}}
	var done [2]int // each runner writes a byte when it has spun
	if err := unix.Pipe(done[:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ready := make(chan error)
	var spinnerTID int
	for _, r := range append([]*runner{spinner}, rs...) {
		if err := unix.Pipe(r.fds[:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if r == spinner {
				spinnerTID = unix.Gettid()
			}
			err := realTime(r.name, cpu, r.prio)
			ready <- err
			if err != nil {
				return
			}
			var b [1]byte
			unix.Read(r.fds[0], b[:]) // blocked in the kernel until the waker writes
			if r == spinner {
				for quit.Load() == 0 {
				}
			} else {
				for end := nanotime() + int64(r.spin); nanotime() < end; {
				}
			}
			unix.Write(done[1], b[:])
		}()
		if err := <-ready; err != nil {
			fmt.Fprintln(os.Stderr, err)
			return noRealTime
		}
	}
	fmt.Printf("spinner %d\n", spinnerTID)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "waiting for go:", err)
		return 1
	}
	one := []byte{1}
	unix.Write(spinner.fds[1], one)
	sleep(20 * time.Millisecond) // spinner spins
	for _, r := range rs {
		unix.Write(r.fds[1], one)
	}
	for range rs {
		unix.Read(done[0], one)
	}
	sleep(20 * time.Millisecond) // spinner runs again: its spell ends
	quit.Store(1)
	unix.Read(done[0], one)
	return 0
}

// TestOffCPUNamesTheLongestRunner: a followed thread spins pinned to a
// CPU; three real-time threads of another process take that CPU in a row
// for 3, 60 and 3 ms. Its spell must name the one that ran 60 ms (hog),
// not the first nor the last: on 6.12 a hog that ran between a kworker
// and the tracer's reader went unnamed. All four threads are the helper
// process's, where the Go runtime cannot preempt them (runRunners): with
// the spinner in this test's process, the runtime's preemptions could make
// a 60 ms spell two, or a sleep (CI failed once so, 2026-11-26, on a busy
// machine). All four, and the thread that wakes the runners, are
// SCHED_FIFO: on a machine busy with compilers, a spinner of the fair
// class waited for them (a spell that named clang, or a second spell of
// 50 ms) and a late waker split the spell. The runners are followed too, as siblings in a traced program
// are: one preempted inside the spinner's spell must not take its count
// (it did: 6 of 6 runs named first, before the BPF kept the slot).
func TestOffCPUNamesTheLongestRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || !set.IsSet(0) || !set.IsSet(1) {
		t.Skipf("needs CPUs 0 and 1 (affinity %v, %v)", set, err)
	}
	const cpu = 1
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), fmt.Sprintf("%s=%d", runnersEnv, cpu), "GODEBUG=asyncpreemptoff=1")
	var stderr bytes.Buffer
	helper.Stderr = &stderr
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var spinner int
	if _, err := fmt.Fscanf(stdout, "spinner %d\n", &spinner); err != nil {
		stdin.Close()
		werr := helper.Wait()
		if ee, ok := werr.(*exec.ExitError); ok && ee.ExitCode() == noRealTime {
			t.Skipf("the runners cannot be pinned real-time threads here: %s", stderr.String())
		}
		t.Fatalf("helper: %v (%v): %s", err, werr, stderr.String())
	}
	// Only the helper is followed: a thread of this process preempted on
	// cpu as the run begins would hold its slot as the helper's would.
	tr, err := Open(Options{RingBytes: 1 << 20, Follow: []uint32{uint32(helper.Process.Pid)}})
	if err != nil {
		stdin.Close()
		helper.Wait()
		t.Fatal(err)
	}
	defer tr.Close()
	began := Mono()
	fmt.Fprintln(stdin, "go")
	err = helper.Wait()
	stopped := Mono()
	if err != nil {
		t.Fatalf("runners: %v: %s", err, stderr.String())
	}
	var spells, all []rdma.Event
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = tr.Run(ctx, Consumer{Event: func(ev *rdma.Event) error {
		if ev.Kind != rdma.EvOffCPU || int(ev.Owner.PID) != helper.Process.Pid || ev.Mono < began || ev.Mono >= stopped {
			return nil
		}
		all = append(all, *ev)
		if int(ev.Owner.TID) != spinner {
			return nil
		}
		if ev.OffCPU.Dur >= 50e6 && ev.Has(rdma.EvPreempted) {
			spells = append(spells, *ev)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	logAll := func() {
		for _, ev := range all {
			if int(ev.Owner.TID) == spinner && ev.OffCPU.Dur < 1e6 {
				continue // the spinner's many short spells
			}
			t.Logf("spell of %s[%d] at +%.2f ms: %.2f ms, preempted %v, %s[%d] ran longest, %s[%d] last", ev.Owner.Comm, ev.Owner.TID,
				float64(ev.Mono-began)/1e6, float64(ev.OffCPU.Dur)/1e6, ev.Has(rdma.EvPreempted), ev.OffCPU.Next.Comm, ev.OffCPU.Next.TID, ev.Actor.Comm, ev.Actor.TID)
		}
	}
	if len(spells) != 1 {
		logAll()
		t.Fatalf("%d preempted off-cpu spells of 50 ms or more of the spinning thread %d, want 1", len(spells), spinner)
	}
	s := spells[0]
	if s.OffCPU.Next.Comm != "hog" {
		logAll()
		t.Errorf("a %.1f ms spell names %s[%d] (last %s[%d]): want hog",
			float64(s.OffCPU.Dur)/1e6, s.OffCPU.Next.Comm, s.OffCPU.Next.TID, s.Actor.Comm, s.Actor.TID)
	}
	t.Logf("%.1f ms off CPU, preempted: %s[%d] ran longest, %s[%d] last", float64(s.OffCPU.Dur)/1e6, s.OffCPU.Next.Comm, s.OffCPU.Next.TID, s.Actor.Comm, s.Actor.TID)
}

// BenchmarkContextSwitch times a round trip between two threads over two
// pipes (two context switches each, on one CPU) with no tracer, with the
// scheduler hooks attached following another process (every switch of the
// machine runs them and is filtered out in BPF), and following this one
// (each switch records a spell and accounts its runner).
func BenchmarkContextSwitch(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("loading BPF programs needs root")
	}
	for _, c := range []struct {
		name   string
		follow int
	}{{"untraced", -1}, {"other-followed", 1}, {"self-followed", os.Getpid()}} {
		b.Run(c.name, func(b *testing.B) {
			if c.follow >= 0 {
				tr, err := Open(Options{RingBytes: 64 << 20, Follow: []uint32{uint32(c.follow)}})
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go tr.Run(ctx, Consumer{Event: func(*rdma.Event) error { return nil }})
			}
			var ab, ba [2]int
			if err := unix.Pipe(ab[:]); err != nil {
				b.Fatal(err)
			}
			if err := unix.Pipe(ba[:]); err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, fd := range []int{ab[0], ab[1], ba[0], ba[1]} {
					unix.Close(fd)
				}
			}()
			var one unix.CPUSet
			one.Set(1)
			done := make(chan struct{})
			go func() { // the echo thread, on CPU 1
				runtime.LockOSThread()
				unix.SchedSetaffinity(0, &one)
				var buf [1]byte
				for {
					if n, _ := unix.Read(ab[0], buf[:]); n != 1 || buf[0] == 0 {
						close(done)
						return
					}
					unix.Write(ba[1], buf[:])
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var was unix.CPUSet
			unix.SchedGetaffinity(0, &was)
			unix.SchedSetaffinity(0, &one)
			defer unix.SchedSetaffinity(0, &was)
			buf := []byte{1}
			b.ResetTimer()
			for range b.N {
				unix.Write(ab[1], buf)
				unix.Read(ba[0], buf)
			}
			b.StopTimer()
			unix.Write(ab[1], []byte{0})
			<-done
		})
	}
}
