package nlpoll

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll/snapdiff"
)

// fakeDumps hands out snapshots: the nth dump lists n QPs on one device
// (a QP more each time), with errs[n] as its error when there is one.
type fakeDumps struct {
	mu   sync.Mutex
	n    int
	errs map[int]error
	// after, when set, is called with the number of dumps taken.
	after func(n int)
}

func (d *fakeDumps) dump() (*snapdiff.Snapshot, error) {
	d.mu.Lock()
	n := d.n
	d.n++
	d.mu.Unlock()
	s := &snapdiff.Snapshot{Time: time.Unix(int64(n), 0).UTC(), DevicesOK: true,
		Devices: []rdma.Device{{Index: 1, Name: "rxe0"}}, Types: []rdma.ResType{rdma.ResQP}}
	for i := range n {
		s.Resources = append(s.Resources, rdma.Resource{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", LQPN: uint32(17 + i)})
	}
	if d.after != nil {
		d.after(n + 1)
	}
	return s, d.errs[n]
}

// collected is what a Poller wrote and warned of.
type collected struct {
	mu     sync.Mutex
	events []rdma.Event
	warns  []string
}

func (c *collected) write(e *rdma.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, *e)
	return nil
}

func (c *collected) warn(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warns = append(c.warns, err.Error())
}

func (c *collected) kinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []string
	for _, e := range c.events {
		ks = append(ks, fmt.Sprintf("%s %s", e.Kind, e.Type))
	}
	return ks
}

// runFor runs p until it ends by itself or within a few seconds.
func runFor(t *testing.T, p *Poller, stop chan struct{}) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Run(stop) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		close(stop)
		t.Fatal("the poller did not end")
		return nil
	}
}

func TestPollerStopsWhenTheCountIsReached(t *testing.T) {
	d := &fakeDumps{}
	var c collected
	p := New(Options{Interval: time.Millisecond, Count: 4, Write: c.write}, d.dump, nil)
	p.Start(true) // no QP yet: nothing shown
	if err := runFor(t, p, make(chan struct{})); err != nil {
		t.Fatalf("Run: %v, want nil at the count", err)
	}
	if p.Shown() != 4 || len(c.events) != 4 {
		t.Errorf("shown %d, written %d; want 4 and 4", p.Shown(), len(c.events))
	}
	for _, e := range c.events {
		if e.Kind != rdma.EvCreate || e.Flags&rdma.EvPolled == 0 {
			t.Errorf("event %v %v: want a polled create", e.Kind, e.Flags)
		}
	}
	if p.Dumps() < 5 {
		t.Errorf("%d dumps; want 5 or more (one a QP)", p.Dumps())
	}
}

func TestPollerKeepsOnlyWhatKeepKeeps(t *testing.T) {
	d := &fakeDumps{}
	var c collected
	keep := func(e *rdma.Event) bool { return e.LQPN%2 == 0 } // 18, 20
	p := New(Options{Interval: time.Millisecond, Count: 2, Write: c.write, Keep: keep}, d.dump, nil)
	p.Start(true)
	if err := runFor(t, p, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	var qpns []uint32
	for _, e := range c.events {
		qpns = append(qpns, e.LQPN)
	}
	if !slices.Equal(qpns, []uint32{18, 20}) {
		t.Errorf("QPs written %v; want [18 20]", qpns)
	}
}

func TestPollerSaysADumpErrorOnceUntilItChanges(t *testing.T) {
	a, b := errors.New("qp: operation not permitted"), errors.New("cm_id: no buffer space")
	stop := make(chan struct{})
	d := &fakeDumps{errs: map[int]error{0: a, 1: a, 2: a, 3: b, 4: b, 6: a}}
	d.after = func(n int) {
		if n == 8 {
			close(stop)
		}
	}
	var c collected
	p := New(Options{Interval: time.Millisecond, Write: c.write, Warn: c.warn}, d.dump, nil)
	p.Start(false)
	if err := runFor(t, p, stop); err != nil {
		t.Fatal(err)
	}
	want := []string{"netlink dump: " + a.Error(), "netlink dump: " + b.Error(), "netlink dump: " + a.Error()}
	if !slices.Equal(c.warns, want) {
		t.Errorf("warned\n%q\nwant\n%q", c.warns, want)
	}
	var de *DumpError
	if err := (&DumpError{Err: a}); !errors.As(error(err), &de) || !errors.Is(err, a) {
		t.Error("a DumpError does not unwrap to the dump's error")
	}
}

// fakeMonitor sends one device event, then waits for Close.
type fakeMonitor struct {
	ev     rdma.Event
	closed chan struct{}
}

func (m *fakeMonitor) Run(emit func(*rdma.Event), bad func(error)) error {
	emit(&m.ev)
	bad(errors.New("a message not understood"))
	<-m.closed
	return nil
}

func (m *fakeMonitor) Close() error { close(m.closed); return nil }

func TestPollerWritesTheMonitorsAndTheDumpsEvents(t *testing.T) {
	mon := &fakeMonitor{ev: rdma.Event{Kind: rdma.EvDevRegister, Resource: rdma.Resource{DevIndex: 2, DevName: "siw0"}}, closed: make(chan struct{})}
	d := &fakeDumps{}
	var c collected
	p := New(Options{Interval: time.Millisecond, Count: 3, Write: c.write, Warn: c.warn}, d.dump, mon)
	p.Start(true)
	if err := runFor(t, p, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	ks := c.kinds()
	if !slices.Contains(ks, fmt.Sprintf("%s %s", rdma.EvDevRegister, rdma.Event{}.Type)) || !slices.Contains(ks, fmt.Sprintf("%s %s", rdma.EvCreate, rdma.ResQP)) {
		t.Errorf("written %q: want the monitor's dev_register and the dumps' QP creates", ks)
	}
	for _, e := range c.events {
		if e.Kind == rdma.EvDevRegister && e.Flags&rdma.EvPolled != 0 {
			t.Error("the monitor's event is marked polled: the dumps report no devices beside a monitor")
		}
	}
	select {
	case <-mon.closed:
	default:
		t.Error("Run left the monitor open")
	}
	if !slices.Contains(c.warns, "a message not understood") {
		t.Errorf("warned %q: want the monitor's error", c.warns)
	}
}

// A snapshot of an inventory marks the types whose dumps failed, and its
// error is the inventory's partial one (a type the kernel cannot dump is
// no error).
func TestSnapshotOfAnInventory(t *testing.T) {
	at := time.Unix(5, 0).UTC()
	inv := nldev.Inventory{
		Devices:   []rdma.Device{{Index: 1, Name: "rxe0"}},
		Resources: []rdma.Resource{{Type: rdma.ResQP, DevIndex: 1, LQPN: 17}},
		TypeErrs: []nldev.TypeError{
			{Type: rdma.ResMR, Err: errors.New("mr: permission denied")},
			{Type: rdma.ResSRQ, Err: fmt.Errorf("srq: %w", errors.ErrUnsupported)},
		},
	}
	s, err := Snapshot(at, inv)
	if err == nil || err.Error() != "mr: permission denied" {
		t.Errorf("error %v; want the mr dump's alone", err)
	}
	if !s.Time.Equal(at) || !s.DevicesOK || len(s.Resources) != 1 || !slices.Equal(s.Failed, []rdma.ResType{rdma.ResMR, rdma.ResSRQ}) {
		t.Errorf("snapshot %+v: want at %v, devices whole, 1 QP, mr and srq failed", s, at)
	}
	inv.DevicesErr = errors.New("devices: no such device")
	if s, _ := Snapshot(at, inv); s.DevicesOK {
		t.Error("a failed device dump makes a whole device list")
	}
}
