package leaks

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// report is a Report that keeps what it is given.
type report struct {
	found   []rdma.Finding
	noLeaks int
}

func (r *report) Finding(f *rdma.Finding)     { r.found = append(r.found, *f) }
func (r *report) NoLeaks(time.Time, int, int) { r.noLeaks++ }
func (r *report) Flush() error                { return nil }
func (r *report) count(k rdma.LeakReport) (n int) { // findings of kind k
	for _, f := range r.found {
		if f.Report == k {
			n++
		}
	}
	return n
}

// watch runs a device watch (leaks without a program) over sc's events,
// ticking every second, and ends it at end seconds.
func watch(t *testing.T, sc *script, end float64) (*Live, *report) {
	t.Helper()
	r := &report{}
	var warned []string
	l := NewLive(Options{MaxTable: 100, Window: uint64(50 * time.Millisecond)}, r, func(s string) { warned = append(warned, s) })
	l.w.Procs.Root = t.TempDir()
	next := 1.0
	for _, e := range sc.events() {
		for ; at(next).Before(e.Time); next++ {
			l.Tick(uint64(next*1e9), at(next))
		}
		if err := l.Push(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.End(at(end)); err != nil {
		t.Fatal(err)
	}
	l.Notes()
	if len(warned) > 0 {
		t.Errorf("warnings: %v", warned)
	}
	return l, r
}

// A device watch's exit status says whether a removal leaked: something
// it never freed, or something that held it past MaxBlocked. What is
// alive when the watch ends (a listener, a program still running) is
// listed as alive, and is no leak: after NVMe-oF and NFS over RDMA were
// removed cleanly, leaks used to exit 3 because the NFS server's
// listeners were alive.
func TestDeviceWatchLeaksOnlyWhatARemovalLeft(t *testing.T) {
	t.Run("a clean removal, listeners and a program alive at the end", func(t *testing.T) {
		var sc script
		consumers(&sc)                                               // nvmet_rdma's wildcard listener among them
		pd := sc.res(2, rdma.EvCreate, rdma.ResPD, 40, 300, "rping") // on another device
		pd.DevIndex, pd.DevName = 2, "rxe1"
		devAt(&sc, 5, rdma.EvDevUnregister)
		frees(&sc, 5.1, 224, func(e *rdma.Event) bool { return num(e) == 17 })
		frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 && e.Owner.KernName != "" })
		devAt(&sc, 6.2, rdma.EvDevUnregistered)
		l, r := watch(t, &sc, 30)
		if l.Leaked() != 0 || l.Leaks(nil) {
			t.Errorf("leaked %d: the owners freed everything in time", l.Leaked())
		}
		if n := r.count(rdma.LeakEnd); n != 2 {
			t.Errorf("%d alive at the end, want the wildcard listener and rping's PD listed", n)
		}
	})
	t.Run("a removal that left objects", func(t *testing.T) {
		var sc script
		consumers(&sc)
		devAt(&sc, 5, rdma.EvDevUnregister)
		frees(&sc, 5.1, 224, func(e *rdma.Event) bool { return num(e) == 17 })
		frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 && num(e) < 22 }) // not nvmet_rdma's MR
		devAt(&sc, 6.2, rdma.EvDevUnregistered)
		l, r := watch(t, &sc, 30)
		if l.Leaked() != 6 || r.count(rdma.LeakLeft) != 6 || !l.Leaks(nil) {
			t.Errorf("leaked %d, %d left: want the 6 never freed", l.Leaked(), r.count(rdma.LeakLeft))
		}
	})
	for _, c := range []struct {
		end    float64
		leaked int
	}{{7, 0}, {16, 1}} {
		t.Run(fmt.Sprintf("a removal still blocked %gs after it began", c.end-5), func(t *testing.T) {
			var sc script
			consumers(&sc)
			devAt(&sc, 5, rdma.EvDevUnregister)
			frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 })
			l, _ := watch(t, &sc, c.end)
			if l.Leaked() != c.leaked {
				t.Errorf("leaked %d, want %d (MaxBlocked %v)", l.Leaked(), c.leaked, DefaultMaxBlocked)
			}
		})
	}
}

// The exit status: ExitLeaked when something leaked and the run ended as
// it should or with its program's status; the run's own error otherwise.
func TestLeaksDecidesTheExitStatus(t *testing.T) {
	var sc script
	consumers(&sc)
	devAt(&sc, 5, rdma.EvDevUnregister)
	devAt(&sc, 6, rdma.EvDevUnregistered) // everything left
	leaky, _ := watch(t, &sc, 10)
	clean, _ := watch(t, &script{}, 10)
	for _, c := range []struct {
		l    *Live
		err  error
		want bool
	}{
		{leaky, nil, true},
		{leaky, &tracer.ExitError{Code: 7}, true}, // the program's status: the leak comes first
		{leaky, errors.New("ring buffer: read failed"), false},
		{clean, nil, false},
		{clean, &tracer.ExitError{Code: 7}, false},
	} {
		if got := c.l.Leaks(c.err); got != c.want {
			t.Errorf("leaked %d, run error %v: Leaks %v, want %v", c.l.Leaked(), c.err, got, c.want)
		}
	}
}
