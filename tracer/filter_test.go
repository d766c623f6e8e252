package tracer

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The pid and cgroup filters act in the kernel: the host has no RDMA, but
// the off-CPU spells of a followed process are events with an owner. With
// another pid (or cgroup) as the filter, none reaches Run and the kernel
// counts them as filtered; with ours, they arrive again.
func TestFiltersDiscardInTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	tr, err := Open(Options{RingBytes: 1 << 20, Follow: []uint32{uint32(os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// drain reads what was queued before a filter changed: the reader's
	// own process keeps making spells between two Runs.
	drain := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = tr.Run(ctx, Consumer{Event: func(*rdma.Event) error { return nil }})
	}
	spells := func() int {
		drain()
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range 5 {
				time.Sleep(5 * time.Millisecond)
			}
		}()
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := tr.Run(ctx, Consumer{Event: func(ev *rdma.Event) error {
			if ev.Kind == rdma.EvOffCPU && ev.Owner.PID == uint32(os.Getpid()) {
				n++
			}
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := spells(); n == 0 {
		t.Fatal("no off-cpu spells of our own process without a filter")
	}
	if err := tr.OnlyPIDs([]uint32{1}); err != nil {
		t.Fatal(err)
	}
	before, _ := tr.Filtered()
	if n := spells(); n != 0 {
		t.Errorf("%d spells of ours reached Run with a filter on pid 1", n)
	}
	after, err := tr.Filtered()
	if err != nil || after <= before {
		t.Errorf("filtered %d -> %d (%v): the kernel did not count what it discarded", before, after, err)
	}
	if err := tr.OnlyPIDs([]uint32{1, uint32(os.Getpid())}); err != nil {
		t.Fatal(err)
	}
	if n := spells(); n == 0 {
		t.Error("no spells of ours with our pid in the filter")
	}
	if err := tr.OnlyCgroups([]uint64{1 << 60}); err != nil { // no such cgroup
		t.Fatal(err)
	}
	if n := spells(); n != 0 {
		t.Errorf("%d spells reached Run with a cgroup filter matching nothing", n)
	}
}
