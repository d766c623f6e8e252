package tracer

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// TestSideMapsAreLRU: the maps that carry a value from a function's entry
// to its return must evict what a missed return left behind; a plain HASH
// fills up and then loses every later event (issue 10, D17).
func TestSideMapsAreLRU(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"closing", "entry_args", "modify_args"} {
		if got := spec.Maps[name].Type; got != ebpf.LRUHash {
			t.Errorf("map %s is %v, want LRUHash", name, got)
		}
	}
	if got := spec.Maps["side_drops"]; got == nil || got.Type != ebpf.PerCPUArray {
		t.Errorf("side_drops: %+v, want a per-CPU array", got)
	}
}

// TestFullSideMapCounts runs the kretprobe fallbacks' entry and return
// halves (as the raw_tp programs selftest_save_entry/selftest_take_entry,
// which share their code) on this kernel: twice as many calls enter as
// entry_args holds, then all return. Every call must either find its
// entry or be counted in side_drops; none may vanish.
func TestFullSideMapCounts(t *testing.T) {
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
	var objs struct {
		Save      *ebpf.Program `ebpf:"selftest_save_entry"`
		Take      *ebpf.Program `ebpf:"selftest_take_entry"`
		Args      *ebpf.Map     `ebpf:"entry_args"`
		SideDrops *ebpf.Map     `ebpf:"side_drops"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Skipf("raw_tp programs do not load here: %v", err)
	}
	defer objs.Save.Close()
	defer objs.Take.Close()
	defer objs.Args.Close()
	defer objs.SideDrops.Close()

	size := uint64(objs.Args.MaxEntries())
	calls := 2 * size
	run := func(p *ebpf.Program, key uint64) {
		if _, err := p.Run(&ebpf.RunOptions{Context: []uint64{key}}); err != nil {
			t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
		}
	}
	for k := uint64(1); k <= calls; k++ {
		run(objs.Save, k)
	}
	found := uint64(0)
	for k := uint64(1); k <= calls; k++ {
		var v uint64
		if objs.Args.Lookup(k, &v) == nil {
			found++
		}
		run(objs.Take, k)
	}
	var perCPU []uint64
	if err := objs.SideDrops.Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	drops := uint64(0)
	for _, n := range perCPU {
		drops += n
	}
	t.Logf("entry_args of %d: %d calls, %d returns found their entry, %d counted as side drops", size, calls, found, drops)
	if found+drops < calls {
		t.Errorf("%d of %d calls vanished uncounted (%d found, %d counted)", calls-found-drops, calls, found, drops)
	}
	if drops < calls-size {
		t.Errorf("%d counted, want at least the %d that could not fit", drops, calls-size)
	}
	if found == 0 {
		t.Errorf("no return found its entry: the map keeps nothing")
	}
	var k, v uint64
	if objs.Args.NextKey(nil, &k) == nil && objs.Args.Lookup(k, &v) == nil {
		t.Errorf("entry_args still holds %d after every return", k)
	}
}

// TestFullStashCounts runs the kprobe fallbacks' stash (PORT_HOOK's
// halves, as the raw_tp programs selftest_stash_save/selftest_stash_take)
// past its size: twice as many calls enter as the stash holds, then all
// return. Each return finds its arguments or is counted in side_drops,
// exactly once (failed before: the ports' stash lost an evicted entry, and
// a failed save, without a count).
func TestFullStashCounts(t *testing.T) {
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
	var objs struct {
		Save      *ebpf.Program `ebpf:"selftest_stash_save"`
		Take      *ebpf.Program `ebpf:"selftest_stash_take"`
		Stash     *ebpf.Map     `ebpf:"stash"`
		SideDrops *ebpf.Map     `ebpf:"side_drops"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatalf("the stash's selftest programs do not load: %v", err)
	}
	defer objs.Save.Close()
	defer objs.Take.Close()
	defer objs.Stash.Close()
	defer objs.SideDrops.Close()

	calls := 2 * uint64(objs.Stash.MaxEntries())
	run := func(p *ebpf.Program, fn uint64) uint32 {
		ret, err := p.Run(&ebpf.RunOptions{Context: []uint64{fn}})
		if err != nil {
			t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
		}
		return ret
	}
	for fn := uint64(1); fn <= calls; fn++ {
		run(objs.Save, fn)
	}
	found := uint64(0)
	for fn := uint64(1); fn <= calls; fn++ {
		found += uint64(run(objs.Take, fn))
	}
	var perCPU []uint64
	if err := objs.SideDrops.Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	drops := uint64(0)
	for _, n := range perCPU {
		drops += n
	}
	t.Logf("stash of %d: %d calls, %d returns found their arguments, %d counted as side drops", objs.Stash.MaxEntries(), calls, found, drops)
	if found == 0 {
		t.Error("no return found its arguments: the stash keeps nothing")
	}
	if found+drops != calls {
		t.Errorf("%d calls, %d found and %d counted: each must be one or the other, once", calls, found, drops)
	}
}
