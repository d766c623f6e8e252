package tracer

import (
	"os"
	"testing"
	"testing/fstest"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
)

type busyObjs struct {
	Admit      *ebpf.Program `ebpf:"selftest_busy_admit"`
	ReserveB   *ebpf.Program `ebpf:"selftest_reserve_busy"`
	Reserve    *ebpf.Program `ebpf:"selftest_reserve"`
	Limits     *ebpf.Map     `ebpf:"busy_limits"`
	Suppressed *ebpf.Map     `ebpf:"busy_suppressed"`
	BusyDrops  *ebpf.Map     `ebpf:"busy_drops"`
	Drops      *ebpf.Map     `ebpf:"drops"`
	Events     *ebpf.Map     `ebpf:"events"`
}

func (o *busyObjs) close() {
	for _, c := range []interface{ Close() error }{o.Admit, o.ReserveB, o.Reserve, o.Limits, o.Suppressed, o.BusyDrops, o.Drops, o.Events} {
		c.Close()
	}
}

// loadBusy loads the port-busy selftest programs with a ring of ringBytes.
func loadBusy(t *testing.T, ringBytes uint32) *busyObjs {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	spec.Maps["events"].MaxEntries = ringBytes
	var o busyObjs
	if err := spec.LoadAndAssign(&o, nil); err != nil {
		t.Skipf("raw_tp programs do not load here: %v", err)
	}
	t.Cleanup(o.close)
	return &o
}

func runProg(t *testing.T, p *ebpf.Program, args ...uint64) int32 {
	t.Helper()
	ret, err := p.Run(&ebpf.RunOptions{Context: args})
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	return int32(ret)
}

func sumPerCPU(t *testing.T, m *ebpf.Map) uint64 {
	t.Helper()
	var perCPU []uint64
	if err := m.Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n
}

// TestBusyRateLimitCarriesWhatItHeldBack runs the port-busy rate limit
// (busy_admit, as selftest_busy_admit): the first failure of a process on
// a port is shown, the next ones within the second are held back and
// counted, and the first one shown after that carries their number.
func TestBusyRateLimitCarriesWhatItHeldBack(t *testing.T) {
	o := loadBusy(t, 1<<16)
	const op, port = 3, 0x1234
	if got := runProg(t, o.Admit, op, port); got != 0 {
		t.Fatalf("first failure: %d, want 0 (shown, nothing held back)", got)
	}
	for i := 0; i < 5; i++ {
		if got := runProg(t, o.Admit, op, port); got != -1 {
			t.Fatalf("failure %d within the second: %d, want -1 (held back)", i+2, got)
		}
	}
	if got := runProg(t, o.Admit, op, port+1); got != 0 {
		t.Errorf("another port: %d, want 0 (its own limit)", got)
	}
	if got := runProg(t, o.Admit, op+1, port); got != 0 {
		t.Errorf("another operation: %d, want 0 (its own limit)", got)
	}
	if n := sumPerCPU(t, o.Suppressed); n != 5 {
		t.Errorf("busy_suppressed %d, want 5", n)
	}
	// A second later, as far as the limit knows.
	key := bpf.RdmatraceBusyKey{Tgid: uint32(os.Getpid()), Port: port, Op: op}
	var l bpf.RdmatraceBusyLimit
	if err := o.Limits.Lookup(key, &l); err != nil {
		t.Fatalf("busy_limits has no entry for %+v: %v", key, err)
	}
	if l.Held != 5 {
		t.Errorf("held %d, want 5", l.Held)
	}
	l.Next = 0
	if err := o.Limits.Put(key, l); err != nil {
		t.Fatal(err)
	}
	if got := runProg(t, o.Admit, op, port); got != 5 {
		t.Errorf("first failure after the second: %d, want 5 (the held-back count carried)", got)
	}
	if got := runProg(t, o.Admit, op, port); got != -1 {
		t.Errorf("the next one: %d, want -1 (a new second began)", got)
	}
}

// TestBusyEventsLeaveTheRingToLifecycleEvents: port-busy events on ever
// new ports (no rate limit applies) stop at a quarter of the ring, counted
// in busy_drops; lifecycle events then still fill the other three
// quarters, and only their own overflow is counted in drops.
func TestBusyEventsLeaveTheRingToLifecycleEvents(t *testing.T) {
	const ring = 1 << 16
	o := loadBusy(t, ring)
	rec := uint64(portBusySize + 8) // the ring's record header
	life := uint64(resSize + 8)
	busy := uint64(0)
	for port := uint64(1); port <= ring/rec; port++ {
		busy += uint64(runProg(t, o.ReserveB, 3, port))
	}
	busyDrops := sumPerCPU(t, o.BusyDrops)
	if busy == 0 || busy*rec > ring/4 {
		t.Errorf("%d port-busy events queued (%d bytes), want some and at most a quarter of %d", busy, busy*rec, ring)
	}
	if busy+busyDrops != ring/rec {
		t.Errorf("%d queued + %d in busy_drops, want all %d counted", busy, busyDrops, ring/rec)
	}
	queued := uint64(0)
	for i := uint64(0); i < ring/life; i++ {
		queued += uint64(runProg(t, o.Reserve))
	}
	if want := (ring - ring/4) / life; queued < want {
		t.Errorf("%d lifecycle events queued after the port-busy ones, want at least %d", queued, want)
	}
	if d := sumPerCPU(t, o.Drops); queued+d != ring/life {
		t.Errorf("%d lifecycle queued + %d in drops, want all %d counted", queued, d, ring/life)
	}
	if n := sumPerCPU(t, o.BusyDrops); n != busyDrops {
		t.Errorf("busy_drops went from %d to %d with lifecycle events", busyDrops, n)
	}
	t.Logf("ring of %d: %d port-busy queued, %d refused; %d lifecycle queued after them", ring, busy, busyDrops, queued)
}

// TestIWarpDevicesAreCountedFromSysfs: RNICs ("4: RNIC") count, RoCE and
// InfiniBand devices ("1: CA") do not.
func TestIWarpDevicesAreCountedFromSysfs(t *testing.T) {
	fsys := fstest.MapFS{
		"class/infiniband/siw0/node_type":   {Data: []byte("4: RNIC\n")},
		"class/infiniband/rxe0/node_type":   {Data: []byte("1: CA\n")},
		"class/infiniband/mlx5_0/node_type": {Data: []byte("1: CA\n")},
		"class/infiniband/irdma1/node_type": {Data: []byte("4: RNIC\n")},
	}
	if n := iwarpDevices(fsys); n != 2 {
		t.Errorf("%d iWARP devices, want 2", n)
	}
	if n := iwarpDevices(fstest.MapFS{}); n != 0 {
		t.Errorf("no /sys/class/infiniband: %d, want 0", n)
	}
}
