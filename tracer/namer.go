package tracer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Naming who holds the port a port-busy event could not have, or the
// process of an SMC socket that fell back in a kworker, reads every socket,
// rdma_cm ID and process's open files: milliseconds, and seconds on a host
// with many open files. The ring's reader must not wait for it, as any
// user can make such events. So Run hands them to a namer: one goroutine
// names them in turn, and Run delivers them, in the order it read them,
// between the records that follow. Lifecycle events never wait on it.
//
// The namer has a budget: at most namerRate lookups a second (namerBurst
// at once) and namerQueue waiting. An event beyond it, or still waiting
// when the stop's drain ends, is delivered at once, its holders not looked
// up (nil, as the formats say), and counted (NamingSkipped).
const (
	namerRate  = 10
	namerBurst = 10
	namerQueue = 64
)

// Item states: Run takes an item (queued); the namer starts on it
// (naming) and finishes (named); at the stop's deadline Run may abandon
// one still queued or naming, and delivers it unnamed.
const (
	itemQueued int32 = iota
	itemNaming
	itemNamed
	itemAbandoned
)

// namerItem is one event handed to the namer. orig is Run's, named the
// namer's until the item's state says it is named.
type namerItem struct {
	state atomic.Int32
	orig  rdma.Event
	named rdma.Event
}

// namer names events off the reader's path. Only Run's goroutine calls
// take, deliverReady and drain; the namer's goroutine runs loop.
type namer struct {
	name  func(*rdma.Event) // the enricher: what names the event
	wake  func()            // makes a waiting Run look again
	now   func() time.Time
	order []*namerItem // taken and not yet delivered, in ring order (Run's)
	work  chan *namerItem
	done  chan struct{} // a signal that an item was named (buffered 1)
	start sync.Once
	quit  chan struct{}

	// The budget: a token bucket, as GCRA keeps it (Run's).
	tat time.Time

	named   atomic.Uint64 // events named by the namer
	skipped atomic.Uint64 // events delivered unnamed: over the budget, or at the stop
}

func newNamer(name func(*rdma.Event), wake func()) *namer {
	return &namer{name: name, wake: wake, now: time.Now,
		work: make(chan *namerItem, namerQueue), done: make(chan struct{}, 1), quit: make(chan struct{})}
}

// wants says whether naming ev takes a lookup: a port-busy event whose
// holders are still to be named, an SMC fallback without its process.
func wants(ev *rdma.Event) bool {
	switch ev.Kind {
	case rdma.EvPortBusy:
		return ev.PortBusy.Holders == nil
	case rdma.EvSMCFallback:
		return ev.SMCFallback.Inode != 0 && !ev.Has(rdma.EvHasOwner)
	}
	return false
}

// take hands ev to the namer, which copies it. false: the budget is spent
// or the queue full; ev is then named without its lookup (nameQuickly)
// and is the caller's to deliver now.
func (n *namer) take(ev *rdma.Event) bool {
	now := n.now()
	interval := time.Second / namerRate
	tat := n.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > (namerBurst-1)*interval || len(n.order) >= namerQueue {
		n.skipped.Add(1)
		nameQuickly(n.name, ev)
		return false
	}
	n.tat = tat.Add(interval)
	n.start.Do(func() { go n.loop() })
	it := &namerItem{orig: *ev}
	it.named = *ev
	n.order = append(n.order, it)
	n.work <- it // never blocks: at most namerQueue are taken and not delivered
	return true
}

// nameQuickly names ev as the enricher does, without the lookup: its
// holders (or an SMC socket's process) stay unnamed. The enricher looks
// them up only while they are missing, so they are made to look present
// for the call.
func nameQuickly(name func(*rdma.Event), ev *rdma.Event) {
	switch ev.Kind {
	case rdma.EvPortBusy:
		ev.PortBusy.Holders = []string{}
		name(ev)
		ev.PortBusy.Holders = nil
	case rdma.EvSMCFallback:
		ino := ev.SMCFallback.Inode
		ev.SMCFallback.Inode = 0
		name(ev)
		ev.SMCFallback.Inode = ino
	default:
		name(ev)
	}
}

// loop names the items in turn.
func (n *namer) loop() {
	for {
		select {
		case <-n.quit:
			return
		case it := <-n.work:
			if !it.state.CompareAndSwap(itemQueued, itemNaming) {
				continue // abandoned while queued
			}
			n.name(&it.named)
			if it.state.CompareAndSwap(itemNaming, itemNamed) {
				n.named.Add(1)
				select {
				case n.done <- struct{}{}:
				default:
				}
				n.wake()
			}
		}
	}
}

// pending says whether events wait to be delivered.
func (n *namer) pending() bool { return n != nil && len(n.order) > 0 }

// ready says whether the first event waiting is named: Run may deliver it.
func (n *namer) ready() bool {
	return n.pending() && n.order[0].state.Load() == itemNamed
}

// deliverReady hands deliver the named events at the head of the order,
// in order, and stops at the first still being named. It says how many it
// delivered.
func (n *namer) deliverReady(deliver func(*rdma.Event) error) (uint, error) {
	k := uint(0)
	for n.ready() {
		it := n.order[0]
		n.order[0] = nil
		n.order = n.order[1:]
		k++
		if err := deliver(&it.named); err != nil {
			return k, err
		}
	}
	return k, nil
}

// drain delivers every event taken: those the namer names by deadline
// named, the rest as they were taken, unnamed and counted.
func (n *namer) drain(deadline time.Time, deliver func(*rdma.Event) error) error {
	for n.pending() {
		if _, err := n.deliverReady(deliver); err != nil {
			return err
		}
		if !n.pending() {
			break
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return n.abandon(deliver)
		}
		t := time.NewTimer(wait)
		select {
		case <-n.done:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// abandon delivers the events still waiting as they were taken, named
// without their lookups, each counted.
func (n *namer) abandon(deliver func(*rdma.Event) error) error {
	for n.pending() {
		it := n.order[0]
		n.order[0] = nil
		n.order = n.order[1:]
		ev := &it.named
		if !it.state.CompareAndSwap(itemQueued, itemAbandoned) && !it.state.CompareAndSwap(itemNaming, itemAbandoned) {
			// named in the meantime: as it is
		} else {
			ev = &it.orig
			n.skipped.Add(1)
			nameQuickly(n.name, ev)
		}
		if err := deliver(ev); err != nil {
			return err
		}
	}
	return nil
}

// NamingSkipped is how many port-busy or SMC fallback events were
// delivered without who held the port (or socket) looked up: over the
// namer's budget, or still waiting at the end of the stop's drain.
func (r *ring) NamingSkipped() uint64 {
	if r.namer == nil {
		return 0
	}
	return r.namer.skipped.Load()
}

// close ends the namer's goroutine; what it was naming is dropped.
func (n *namer) close() {
	if n != nil {
		close(n.quit)
	}
}
