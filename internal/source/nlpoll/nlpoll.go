// Package nlpoll is trace's producer where no BPF can be used: device
// events from the kernel's RDMA netlink monitor group as they come
// (nlmon), and every device and resource dumped at an interval, two dumps
// compared into events (snapdiff), each marked polled. It writes what the
// caller keeps, up to a count, and says a dump's error once until it
// changes.
package nlpoll

import (
	"errors"
	"fmt"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/nlmon"
	"github.com/rdmatrace/rdmatrace/internal/source/nlpoll/snapdiff"
)

// A Monitor gives device events as the kernel sends them (nlmon.Monitor).
type Monitor interface {
	// Run calls emit for each event and bad for each message it cannot
	// read, until Close.
	Run(emit func(*rdma.Event), bad func(error)) error
	Close() error
}

// A Dump is one round of dumps: what it listed, and, when a part of it
// failed, why (that part is then compared no further until it lists
// again).
type Dump func() (*snapdiff.Snapshot, error)

// Options are a Poller's interval and where its events go.
type Options struct {
	// Interval is the time between two dumps.
	Interval time.Duration
	// Keep says which events to write (nil: all).
	Keep func(*rdma.Event) bool
	// Count ends the run after that many events written (0: no limit).
	Count uint64
	// Write takes each kept event; its error ends the run. Flush, when
	// set, follows each batch.
	Write func(*rdma.Event) error
	Flush func() error
	// Warn is told a dump's error (a *DumpError, once until it changes)
	// and a monitor's; nil: they are dropped.
	Warn func(error)
	// Owner names a new resource's owner (snapdiff.Options.Owner).
	Owner func(*rdma.Resource) rdma.Owner
}

// DumpError is a dump that failed in part.
type DumpError struct{ Err error }

func (e *DumpError) Error() string { return "netlink dump: " + e.Err.Error() }
func (e *DumpError) Unwrap() error { return e.Err }

// A Poller is one trace through RDMA netlink.
type Poller struct {
	o    Options
	dump Dump
	mon  Monitor
	diff *snapdiff.Differ
	// shown are the events written, dumps the snapshots taken.
	shown, dumps uint64
	// lastErr is the last dump's error, said once until it changes.
	lastErr string
	// err ends the run: a write error, or errCount.
	err error
}

// New makes a Poller over dump and, when mon is not nil, the monitor's
// device events (then the dumps report no device changes of their own).
func New(o Options, dump Dump, mon Monitor) *Poller {
	return &Poller{o: o, dump: dump, mon: mon,
		diff: snapdiff.New(snapdiff.Options{Devices: mon == nil, Owner: o.Owner})}
}

// Netlink is a Poller's source on this host: the client, and the monitor
// group when the kernel has one.
type Netlink struct {
	Client *nldev.Client
	// Monitor is nil when the monitor group cannot be joined; MonitorErr
	// says why (it came with Linux 6.12).
	Monitor    *nlmon.Monitor
	MonitorErr error
}

// Dial opens RDMA netlink and joins the monitor group where the kernel
// has one. The monitor is joined before the first dump: a device that
// comes between the two is not missed.
func Dial() (*Netlink, error) {
	cl, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	sys, _ := cl.System()
	n := &Netlink{Client: cl}
	n.Monitor, n.MonitorErr = nlmon.Join(sys.Monitor != nil && *sys.Monitor)
	return n, nil
}

// Close closes the client and the monitor (which a Poller's Run has
// closed already when it ran).
func (n *Netlink) Close() error {
	if n.Monitor != nil {
		_ = n.Monitor.Close()
	}
	return n.Client.Close()
}

// Poller makes n's Poller, owners named by owners.
func (n *Netlink) Poller(o Options, owners nldev.Owners) *Poller {
	dump := func() (*snapdiff.Snapshot, error) {
		at := time.Now().UTC()
		return Snapshot(at, n.Client.Inventory(nldev.InventoryOptions{Owners: owners}))
	}
	if n.Monitor == nil {
		return New(o, dump, nil) // not a nil *nlmon.Monitor in a non-nil Monitor
	}
	return New(o, dump, n.Monitor)
}

// Snapshot is what an inventory taken at at says, for snapdiff: a type
// whose dump failed is marked so, and the error is the inventory's
// partial one.
func Snapshot(at time.Time, inv nldev.Inventory) (*snapdiff.Snapshot, error) {
	s := &snapdiff.Snapshot{Time: at, Devices: inv.Devices, DevicesOK: inv.DevicesErr == nil,
		Types: rdma.ResourceTypes, Resources: inv.Resources}
	for _, te := range inv.TypeErrs {
		s.Failed = append(s.Failed, te.Type)
	}
	return s, inv.Partial()
}

// Start takes the first dump, and writes what exists as "exists" events
// when show is set (trace without --no-snapshot).
func (p *Poller) Start(show bool) {
	first := p.diff.Next(p.snapshot())
	if show {
		p.emit(first)
	}
	if p.o.Flush != nil {
		_ = p.o.Flush() // a lasting failure ends the run at Run's first flush
	}
}

// Run writes the monitor's events as they come and each dump's
// differences every Interval, until stop is closed, Count events are
// written or a write fails (whose error it returns). It closes the
// monitor.
func (p *Poller) Run(stop <-chan struct{}) error {
	events, quit := make(chan rdma.Event, 256), make(chan struct{})
	defer close(quit)
	if p.mon != nil {
		defer p.mon.Close()
		go func() {
			send := func(e *rdma.Event) {
				select {
				case events <- *e:
				case <-quit:
				}
			}
			if err := p.mon.Run(send, p.warn); err != nil {
				p.warn(err)
			}
		}()
	}
	tick := time.NewTicker(p.o.Interval)
	defer tick.Stop()
	for p.err == nil {
		select {
		case <-stop:
			return nil
		case e := <-events:
			p.emit([]rdma.Event{e})
		case <-tick.C:
			p.emit(p.diff.Next(p.snapshot()))
		}
		p.flush()
	}
	if p.err == errCount {
		return nil
	}
	return p.err
}

// Dumps is how many dumps were taken; Shown how many events written.
func (p *Poller) Dumps() uint64 { return p.dumps }
func (p *Poller) Shown() uint64 { return p.shown }

// snapshot takes one dump; its error is said once, until it changes.
func (p *Poller) snapshot() *snapdiff.Snapshot {
	s, err := p.dump()
	p.dumps++
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != p.lastErr && msg != "" {
		p.warn(&DumpError{Err: err})
	}
	p.lastErr = msg
	return s
}

// emit writes the events Keep keeps, up to Count.
func (p *Poller) emit(evs []rdma.Event) {
	for i := range evs {
		if p.err != nil {
			return
		}
		if p.o.Keep != nil && !p.o.Keep(&evs[i]) {
			continue
		}
		if err := p.o.Write(&evs[i]); err != nil {
			p.err = err
			return
		}
		if p.shown++; p.shown == p.o.Count {
			p.err = errCount
		}
	}
}

func (p *Poller) flush() {
	if p.o.Flush == nil {
		return
	}
	if err := p.o.Flush(); err != nil && p.err == nil {
		p.err = err
	}
}

func (p *Poller) warn(err error) {
	if p.o.Warn != nil {
		p.o.Warn(err)
	}
}

// errCount ends a run at Count events; it is no failure.
var errCount = errors.New("count reached")

// MinInterval is the shortest interval allowed between two dumps: each
// lists every resource of every device.
const MinInterval = 100 * time.Millisecond

// NotSeen is what a trace through netlink cannot see.
const NotSeen = "rdma_cm events, spans, off-CPU spells, port conflicts, SMC events, and objects created and destroyed (or changed and changed back) between two dumps are not seen"

// Mode says how a trace goes through netlink, a dump every apart, and why
// (reason: why not BPF); with verbose, its mode line too.
func Mode(monitorErr error, every time.Duration, reason string, verbose bool) []string {
	what := fmt.Sprintf("device events from the kernel's monitor group as they come, resources compared every %v", every)
	monitor := "joined"
	if monitorErr != nil {
		what = fmt.Sprintf("devices and resources compared every %v (the kernel's monitor group of device events came with Linux 6.12)", every)
		monitor = "not used: " + monitorErr.Error()
	}
	lines := []string{fmt.Sprintf("no BPF: %s. Tracing through RDMA netlink instead: %s, events marked polled and timed by the dump that found them; %s",
		reason, what, NotSeen)}
	if verbose {
		lines = append(lines, fmt.Sprintf("mode: netlink (monitor group: %s; a dump every %v)", monitor, every))
	}
	return lines
}
