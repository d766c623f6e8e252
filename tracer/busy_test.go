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
	AdmitAs    *ebpf.Program `ebpf:"selftest_busy_admit_as"`
	ReserveB   *ebpf.Program `ebpf:"selftest_reserve_busy"`
	Reserve    *ebpf.Program `ebpf:"selftest_reserve"`
	ReserveAs  *ebpf.Program `ebpf:"selftest_reserve_as"`
	ReserveQA  *ebpf.Program `ebpf:"selftest_reserve_qp_attr"`
	Procs      *ebpf.Map     `ebpf:"busy_procs"`
	Groups     *ebpf.Map     `ebpf:"busy_groups"`
	All        *ebpf.Map     `ebpf:"busy_all"`
	Suppressed *ebpf.Map     `ebpf:"busy_suppressed"`
	BusyDrops  *ebpf.Map     `ebpf:"busy_drops"`
	Drops      *ebpf.Map     `ebpf:"drops"`
	Shed       *ebpf.Map     `ebpf:"shed"`
	AuxShed    *ebpf.Map     `ebpf:"aux_shed"`
	Events     *ebpf.Map     `ebpf:"events"`
}

func (o *busyObjs) close() {
	for _, c := range []interface{ Close() error }{o.Admit, o.AdmitAs, o.ReserveB, o.Reserve, o.ReserveAs, o.ReserveQA, o.Procs, o.Groups, o.All, o.Suppressed, o.BusyDrops, o.Drops, o.Shed, o.AuxShed, o.Events} {
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
// (busy_admit, as selftest_busy_admit_as, at times the test chooses): a
// process's first failure is shown, the next ones within its second are
// held back and counted, and the first one shown after that carries their
// number.
func TestBusyRateLimitCarriesWhatItHeldBack(t *testing.T) {
	o := loadBusy(t, 1<<16)
	const pid, uid, cg, sec = 4000, 65534, 77, uint64(1e9)
	now := 10 * sec
	if got := runProg(t, o.AdmitAs, pid, uid, cg, now); got != 0 {
		t.Fatalf("first failure: %d, want 0 (shown, nothing held back)", got)
	}
	for i := 0; i < 5; i++ {
		if got := runProg(t, o.AdmitAs, pid, uid, cg, now+uint64(i)*sec/10); got != -1 {
			t.Fatalf("failure %d within the second: %d, want -1 (held back)", i+2, got)
		}
	}
	if got := runProg(t, o.AdmitAs, pid+1, uid, cg, now); got != 0 {
		t.Errorf("another process of the same user: %d, want 0 (a bucket of its own)", got)
	}
	if n := sumPerCPU(t, o.Suppressed); n != 5 {
		t.Errorf("busy_suppressed %d, want 5", n)
	}
	var b bpf.RdmatraceBusyBucket
	if err := o.Procs.Lookup(uint32(pid), &b); err != nil || b.Held != 5 {
		t.Errorf("busy_procs[%d]: %+v, %v; want 5 held", pid, b, err)
	}
	if got := runProg(t, o.AdmitAs, pid, uid, cg, now+sec); got != 5 {
		t.Errorf("first failure a second later: %d, want 5 (the held-back count carried)", got)
	}
	if got := runProg(t, o.AdmitAs, pid, uid, cg, now+sec+1); got != -1 {
		t.Errorf("the next one: %d, want -1 (a new second began)", got)
	}
}

// TestBusyLimitHoldsAgainstProcessCycling: a user that fails from ever
// new processes gets a bucket per process but shares its user's, and
// however many users fail at once, they share everyone's; a user that
// has not failed yet still gets its first event through.
func TestBusyLimitHoldsAgainstProcessCycling(t *testing.T) {
	o := loadBusy(t, 1<<16)
	const uid, cg, sec = 65534, 77, uint64(1e9)
	now := 100 * sec
	admitted := 0
	for pid := uint64(5000); pid < 15000; pid++ { // 10 000 processes in a second
		if runProg(t, o.AdmitAs, pid, uid, cg, now+(pid-5000)*sec/10000) >= 0 {
			admitted++
		}
	}
	// A burst of 8, then 4 a second: 12 in the second, one more at its end.
	if admitted < 8 || admitted > 13 {
		t.Errorf("one user from 10 000 processes in a second: %d admitted, want 8 to 13 (its user's bucket)", admitted)
	}
	if got := runProg(t, o.AdmitAs, 1, 0, 1, now+sec/2); got != 0 {
		t.Errorf("root's first failure beside the flood: %d, want 0 (shown)", got)
	}
	// 1 000 users in 1 000 cgroups, each failing once in the same second:
	// everyone's bucket, 32 at once and 16 a second.
	admitted = 0
	later := now + 10*sec
	for i := uint64(0); i < 1000; i++ {
		if runProg(t, o.AdmitAs, 20000+i, 10000+i, 1000+i, later+i*sec/1000) >= 0 {
			admitted++
		}
	}
	if admitted < 32 || admitted > 49 {
		t.Errorf("1 000 users failing once each in a second: %d admitted, want 32 to 49 (everyone's bucket)", admitted)
	}
}

// TestBusyEventsLeaveTheRingToLifecycleEvents: port-busy events the rate
// limit lets through (its buckets emptied before each) stop at a quarter
// of the ring, counted in busy_drops; lifecycle events of several owners
// then still fill the other three quarters, and only their own overflow
// is counted in drops.
func TestBusyEventsLeaveTheRingToLifecycleEvents(t *testing.T) {
	const ring = 1 << 16
	o := loadBusy(t, ring)
	rec := uint64(portBusySize + 8) // the ring's record header
	life := uint64(resSize + 8)
	busy := uint64(0)
	for port := uint64(1); port <= ring/rec; port++ {
		busy += uint64(runProg(t, o.ReserveB, 3, port))
		clearProcs(t, o) // a new process each time: only the quarter limits them
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
		// Owners in turn, none the busiest: the share does not come in.
		queued += uint64(runProg(t, o.ReserveAs, 1000+i%8, 77))
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

// clearProcs empties the rate limit's buckets, as if each call came from
// another process of another user, long after the last.
func clearProcs(t *testing.T, o *busyObjs) {
	t.Helper()
	var pid uint32
	for it := o.Procs.Iterate(); it.Next(&pid, new(bpf.RdmatraceBusyBucket)); {
		_ = o.Procs.Delete(pid)
	}
	var g bpf.RdmatraceBusyGroup
	for it := o.Groups.Iterate(); it.Next(&g, new(bpf.RdmatraceBusyBucket)); {
		_ = o.Groups.Delete(g)
	}
	if err := o.All.Put(uint32(0), bpf.RdmatraceBusyBucket{}); err != nil {
		t.Fatal(err)
	}
}

// TestBusiestOwnerLeavesAQuarterToOthers: one owner (a user in a cgroup)
// that floods the ring with lifecycle records is refused once the ring is
// three quarters full, each refusal counted in shed; another owner's
// records then still find the last quarter, and only their own overflow
// is counted in drops. Before, the flood filled the ring and the other
// owner's records were all dropped.
func TestBusiestOwnerLeavesAQuarterToOthers(t *testing.T) {
	const ring = 1 << 16
	o := loadBusy(t, ring)
	life := uint64(resSize + 8)
	const floodUID, floodCG, otherUID, otherCG = 65534, 77, 0, 1
	flood := uint64(0)
	tries := 2 * ring / life
	for i := uint64(0); i < tries; i++ {
		flood += uint64(runProg(t, o.ReserveAs, floodUID, floodCG))
	}
	shed := sumPerCPU(t, o.Shed)
	if flood*life > ring-ring/4+life || flood*life < ring/2 {
		t.Errorf("the flood queued %d records (%d bytes), want about three quarters of %d", flood, flood*life, ring)
	}
	if flood+shed+sumPerCPU(t, o.Drops) != tries {
		t.Errorf("%d queued + %d shed + %d dropped, want all %d counted", flood, shed, sumPerCPU(t, o.Drops), tries)
	}
	other := uint64(0)
	for i := uint64(0); i < ring/life; i++ {
		other += uint64(runProg(t, o.ReserveAs, otherUID, otherCG))
	}
	if want := (ring/4)/life - 1; other < want {
		t.Errorf("another owner queued %d records after the flood, want at least %d (the last quarter)", other, want)
	}
	if d := sumPerCPU(t, o.Drops); other+d != ring/life {
		t.Errorf("another owner: %d queued + %d dropped, want all %d counted", other, d, ring/life)
	}
	if n := sumPerCPU(t, o.Shed); n != shed {
		t.Errorf("shed went from %d to %d with another owner's records", shed, n)
	}
	t.Logf("ring of %d: the flood queued %d, %d shed; another owner queued %d after it", ring, flood, shed, other)
}

// TestQPSettingsLeaveHalfTheRingToLifecycleEvents: a modify's settings
// (qp-attr records) are refused once the ring is half full, each counted
// in aux_shed, and the QP state changes that follow still find the room
// past it. Before, the settings filled the ring as the lifecycle events did
// and a burst's RTR and RTS moves were dropped with them.
func TestQPSettingsLeaveHalfTheRingToLifecycleEvents(t *testing.T) {
	const ring = 1 << 16
	o := loadBusy(t, ring)
	rec := uint64(qpAttrSize + 8)
	settings := uint64(0)
	tries := ring / rec
	for i := uint64(0); i < tries; i++ {
		settings += uint64(runProg(t, o.ReserveQA, 1))
	}
	aux := sumPerCPU(t, o.AuxShed)
	if settings*rec > ring/2+rec || settings*rec < ring/2 {
		t.Errorf("the settings queued %d records (%d bytes), want half of %d", settings, settings*rec, ring)
	}
	if settings+aux+sumPerCPU(t, o.Drops) != tries {
		t.Errorf("%d queued + %d shed + %d dropped, want all %d counted", settings, aux, sumPerCPU(t, o.Drops), tries)
	}
	moves := uint64(0)
	for i := uint64(0); i < tries; i++ {
		moves += uint64(runProg(t, o.ReserveQA, 0))
	}
	// One owner makes them all here: the share holds its records to three
	// quarters (TestBusiestOwnerLeavesAQuarterToOthers).
	if want := (ring/4)/rec - 1; moves < want {
		t.Errorf("the state changes queued %d records after the settings, want at least %d (from half to three quarters)", moves, want)
	}
	if shed := sumPerCPU(t, o.Shed); moves+shed+sumPerCPU(t, o.Drops) != tries {
		t.Errorf("%d state changes queued + %d shed + %d dropped, want all %d counted", moves, shed, sumPerCPU(t, o.Drops), tries)
	}
	if n := sumPerCPU(t, o.AuxShed); n != aux {
		t.Errorf("aux_shed went from %d to %d with lifecycle records", aux, n)
	}
	t.Logf("ring of %d: %d settings queued, %d shed; %d state changes after them", ring, settings, aux, moves)
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

// TestBusyLimitHoldsAgainstPortCycling: a process that fails on ever new
// ports (the review's 5 000) is held to its own budget, whatever the
// ports: the limit is its owner's, not a table of (process, port,
// operation) keys it can cycle through. Before, each new port was a new
// key, and all 5 000 failures were admitted within the second.
func TestBusyLimitHoldsAgainstPortCycling(t *testing.T) {
	o := loadBusy(t, 1<<16)
	const op, ports = 3, 5000
	admitted := 0
	for port := uint64(1); port <= ports; port++ {
		if runProg(t, o.Admit, op, port) >= 0 {
			admitted++
		}
	}
	held := sumPerCPU(t, o.Suppressed)
	if admitted > 2 {
		t.Errorf("%d of %d failures on distinct ports admitted within a second, want at most 2 (one process's budget)", admitted, ports)
	}
	if uint64(admitted)+held != ports {
		t.Errorf("%d admitted + %d held back, want all %d counted", admitted, held, ports)
	}
}
