// Package top is the model of `rdmatrace top`: the events of a trace (the
// tracer's, or RDMA netlink's polls) folded into counts per owner and per
// device — live objects by type, QPs by state, creates, destroys,
// connections and failures — and taken as a Frame at each refresh for a
// renderer to draw. Run drives it from a source; the renderers are
// internal/view/topview's.
//
// Folding an event costs a few map operations and allocates nothing but a
// failure's sentence, so that a job's start (thousands of creates a
// second) is counted as it comes; the owners are bounded (the rest are
// counted in one "other" row), and so are the objects followed.
package top

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/failures"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// By says what an owner row is: a process, or the pod, Slurm job or
// container the process runs in.
type By uint8

const (
	ByProcess By = iota
	ByPod
	ByJob
	ByContainer
)

var byNames = [...]string{"process", "pod", "job", "container"}

func (b By) String() string { return byNames[b] }

// ParseBy reads --by's word.
func ParseBy(s string) (By, error) {
	for i, n := range byNames {
		if s == n {
			return By(i), nil
		}
	}
	return 0, fmt.Errorf("unknown grouping %q: expected %s", s, strings.Join(byNames[:], ", "))
}

// Defaults of an Aggregator's bounds.
const (
	// DefaultMaxOwners rows of owners are kept; the others fall in "other".
	DefaultMaxOwners = 512
	// DefaultMaxObjects live objects are followed (a QP's state, whose an
	// object is); past it new ones are counted as untracked.
	DefaultMaxObjects = 1 << 20
)

// numTypes covers rdma.ResType's values; numStates rdma.QPState's (ERR
// is 6) and one for a state not known.
const (
	numTypes  = 8
	numStates = 8
	noState   = numStates - 1
)

// Counts are one row's numbers: what lives now, and what happened since
// the start (rates are taken from two frames' counts).
type Counts struct {
	Live [numTypes]int64  // live objects by rdma.ResType
	QPs  [numStates]int64 // live QPs by rdma.QPState (the last: not known)
	// Cumulative since the start.
	Creates, Destroys, Connects, Failures uint64
}

// LiveOf is how many objects of type t live.
func (c *Counts) LiveOf(t rdma.ResType) int64 {
	if int(t) >= numTypes {
		return 0
	}
	return c.Live[t]
}

// InState is how many live QPs are in state s.
func (c *Counts) InState(s rdma.QPState) int64 {
	if int(s) >= noState {
		return 0
	}
	return c.QPs[s]
}

// StateUnknown is how many live QPs have no known state (a netlink
// listing without one).
func (c *Counts) StateUnknown() int64 { return c.QPs[noState] }

// TotalLive is the number of live objects of every type.
func (c *Counts) TotalLive() int64 {
	var n int64
	for _, v := range c.Live {
		n += v
	}
	return n
}

// ownerKey names an owner row. A process is its pid (a thread's objects
// are its process's: the tracer and the netlink client name the tgid);
// a kernel module its name; a place (pod, job, container) its id.
type ownerKey struct {
	pid   uint32
	kern  string
	place string
}

// slot is an owner's or a device's row while it is followed.
type slot struct {
	key   ownerKey
	name  string // comm, device name
	place string // the place's words (runtime:id) with --by
	Counts
	prev    Counts // at the last frame: rates are the difference
	failAt  time.Time
	failWhy string
	// seen is the frame count at this row's last event: a row with
	// nothing alive and no event for a while is let go.
	seen uint64
	used bool
}

// obj is a followed object: whose it is, on which device, and its state.
type obj struct {
	owner, dev int32 // slots (-1: none)
	state      uint8 // a QP's rdma.QPState, noState when not known
	live       bool  // its create (or listing) was seen
	dead       bool  // its destroy was seen before its create: cancels it
	stateMono  uint64
	deadMono   uint64
	typ        rdma.ResType
}

// pending is an object entry made by an event that came before its
// create (events from several CPUs can swap by a little): let go when
// no create came for it within pendingFrames refreshes.
type pending struct {
	key   restable.Key
	frame uint64
}

const pendingFrames = 2

// Aggregator folds events into rows. It is not safe for concurrent use:
// one goroutine feeds it events and takes its frames (Run's).
type Aggregator struct {
	by         By
	maxOwners  int
	maxObjects int

	owners []slot // owners[0] is "other"
	// quiet holds a QP's move to ERR until its disconnect or destroy says
	// it was the connection's end, not a failure.
	quiet    *failures.Quiet[heldFailure]
	ownerIdx map[ownerKey]int32
	freeOwn  []int32
	folded   map[ownerKey]struct{} // owners put in "other", at most foldedMax
	foldedN  uint64

	devs   []slot
	devIdx map[uint32]int32

	node     slot
	objs     map[restable.Key]obj
	pend     []pending
	pendHead int

	untracked uint64 // creates that found the object table full
	frames    uint64
	last      time.Time // the previous frame's time
}

// New makes an Aggregator grouping owners by by, with at most maxOwners
// owner rows (0: DefaultMaxOwners) and maxObjects objects followed (0:
// DefaultMaxObjects).
func New(by By, maxOwners, maxObjects int) *Aggregator {
	if maxOwners <= 0 {
		maxOwners = DefaultMaxOwners
	}
	if maxObjects <= 0 {
		maxObjects = DefaultMaxObjects
	}
	a := &Aggregator{by: by, maxOwners: maxOwners, maxObjects: maxObjects,
		ownerIdx: make(map[ownerKey]int32, maxOwners), folded: map[ownerKey]struct{}{},
		devIdx: map[uint32]int32{}, objs: make(map[restable.Key]obj, 1024), quiet: failures.NewQuiet[heldFailure]()}
	a.owners = make([]slot, 1, maxOwners+1)
	a.owners[0] = slot{name: "other", used: true}
	return a
}

// Start sets the time rates are counted from.
func (a *Aggregator) Start(now time.Time) { a.last = now }

// foldedMax bounds the set of owners counted in "other".
func (a *Aggregator) foldedMax() int { return 4 * a.maxOwners }

// ownerOf is the owner slot of e, -1 when the event names no owner.
func (a *Aggregator) ownerOf(e *rdma.Event) int32 {
	if !e.Has(rdma.EvHasOwner) && e.Owner.PID == 0 && e.Owner.KernName == "" {
		return -1
	}
	k, place := a.keyOf(&e.Owner)
	if i, ok := a.ownerIdx[k]; ok {
		return i
	}
	if len(a.ownerIdx) >= a.maxOwners {
		if _, ok := a.folded[k]; !ok {
			a.foldedN++
			if len(a.folded) < a.foldedMax() {
				a.folded[k] = struct{}{}
			}
		}
		return 0
	}
	var i int32
	if n := len(a.freeOwn); n > 0 {
		i, a.freeOwn = a.freeOwn[n-1], a.freeOwn[:n-1]
	} else {
		i = int32(len(a.owners))
		a.owners = append(a.owners, slot{})
	}
	name := e.Owner.Comm
	if e.Owner.Kernel() {
		name = e.Owner.KernName
	}
	a.owners[i] = slot{key: k, name: name, place: place, used: true, seen: a.frames}
	a.ownerIdx[k] = i
	return i
}

// keyOf is the row an owner counts in, and the place's words (--by).
func (a *Aggregator) keyOf(o *rdma.Owner) (ownerKey, string) {
	if o.Kernel() {
		return ownerKey{kern: o.KernName}, ""
	}
	if a.by == ByProcess {
		return ownerKey{pid: o.PID}, ""
	}
	p := o.Place
	if p == nil {
		return ownerKey{}, ""
	}
	switch a.by {
	case ByPod:
		return ownerKey{place: p.PodUID}, p.PodUID
	case ByJob:
		if p.Runtime != "slurm" {
			return ownerKey{}, ""
		}
		job, _, _ := strings.Cut(p.ContainerID, ".")
		return ownerKey{place: job}, job
	default:
		if p.ContainerID == "" {
			return ownerKey{}, ""
		}
		return ownerKey{place: p.ContainerID}, p.Runtime
	}
}

// devOf is the device slot of e, -1 when it names no device.
func (a *Aggregator) devOf(e *rdma.Event) int32 {
	if !e.Has(rdma.EvHasDev) {
		return -1
	}
	if i, ok := a.devIdx[e.DevIndex]; ok {
		if e.DevName != "" && a.devs[i].name != e.DevName {
			a.devs[i].name = e.DevName // renamed
		}
		return i
	}
	i := int32(len(a.devs))
	a.devs = append(a.devs, slot{name: e.DevName, used: true})
	a.devIdx[e.DevIndex] = i
	return i
}

// rows calls f with the node's row and the rows of owner o and device d
// (when not -1).
func (a *Aggregator) each(o, d int32, f func(*slot)) {
	f(&a.node)
	if o >= 0 {
		f(&a.owners[o])
	}
	if d >= 0 {
		f(&a.devs[d])
	}
}

// Add folds one event in. The event is not kept.
func (a *Aggregator) Add(e *rdma.Event) {
	o, d := a.ownerOf(e), a.devOf(e)
	if o >= 0 {
		a.owners[o].seen = a.frames
	}
	switch e.Kind {
	case rdma.EvCreate, rdma.EvExists, rdma.EvCMIDCreate:
		a.create(e, o, d)
	case rdma.EvDestroy, rdma.EvCMIDDestroy:
		a.destroy(e, o, d)
	case rdma.EvModify:
		a.modify(e)
	case rdma.EvCMEventHandler:
		// A connection up: ESTABLISHED, or CONNECT_RESPONSE for an active
		// side whose QP is in user space (librdmacm moves it to RTS and
		// sends the RTU itself; no ESTABLISHED follows in the kernel).
		if e.Has(rdma.EvHasCM) && e.Status == 0 && (e.CMEvent == rdma.CMEvEstablished || e.CMEvent == rdma.CMEvConnectResponse) {
			a.each(o, d, func(s *slot) { s.Connects++ })
		}
	}
	for _, h := range a.quiet.Observe(e) {
		a.countHeld(h)
	}
	if f, ok := e.Failure(); ok && a.quiet.Failure(e, heldFailure{e: *e, why: f.Why}) {
		a.countFailure(o, d, f.Why, e.Time)
	}
}

// heldFailure is a failure quiet holds: the event, whose owner and device
// are looked up again when it counts (their rows may have gone since).
type heldFailure struct {
	e   rdma.Event
	why string
}

func (a *Aggregator) countHeld(h heldFailure) {
	a.countFailure(a.ownerOf(&h.e), a.devOf(&h.e), h.why, h.e.Time)
}

func (a *Aggregator) countFailure(o, d int32, why string, at time.Time) {
	a.each(o, d, func(s *slot) {
		s.Failures++
		s.failWhy, s.failAt = why, at
	})
}

// create starts following an object: a create, an ID's creation, or an
// object listed at the start (exists, which counts as no create).
func (a *Aggregator) create(e *rdma.Event, o, d int32) {
	k, ok := restable.KeyOf(e)
	if !ok {
		return
	}
	counted := e.Kind != rdma.EvExists
	if e.Kind == rdma.EvCreate && e.Type == rdma.ResCMID {
		// An ID known unbound (by address) is bound to a device now: the
		// same object, moved onto its device's row.
		uk := restable.Key{Dev: restable.NoDevice, Res: rdma.ResCMID, Num: e.Obj}
		if u, found := a.objs[uk]; found && u.live {
			delete(a.objs, uk)
			u.dev = d
			if d >= 0 {
				a.devs[d].Live[rdma.ResCMID]++
			}
			a.objs[k] = u
			return
		}
	}
	old, found := a.objs[k]
	state, stateMono := uint8(noState), e.Mono
	if e.Type == rdma.ResQP && e.Given(rdma.HasState) && int(e.QPState) < noState {
		state = uint8(e.QPState)
	}
	if found {
		switch {
		case old.live && e.Kind == rdma.EvExists:
			return // a listing taken after its create was traced
		case old.live:
			// Its destroy was not seen (a lost event): the new one
			// replaces it.
			a.drop(k, old)
		case old.dead && old.deadMono >= e.Mono:
			// Its destroy came first: the pair is over.
			delete(a.objs, k)
			if counted {
				a.each(o, d, func(s *slot) { s.Creates++ })
			}
			return
		case old.stateMono > e.Mono && old.state != noState:
			state, stateMono = old.state, old.stateMono // a modify that came first
		}
	} else if len(a.objs) >= a.maxObjects {
		a.untracked++
		if counted {
			a.each(o, d, func(s *slot) { s.Creates++ })
		}
		return
	}
	n := obj{owner: o, dev: d, state: state, stateMono: stateMono, live: true, typ: e.Type}
	a.objs[k] = n
	a.each(o, d, func(s *slot) {
		if counted {
			s.Creates++
		}
		if int(e.Type) < numTypes {
			s.Live[e.Type]++
		}
		if e.Type == rdma.ResQP {
			s.QPs[state]++
		}
	})
}

// destroy stops following an object.
func (a *Aggregator) destroy(e *rdma.Event, o, d int32) {
	k, ok := restable.KeyOf(e)
	if !ok {
		return
	}
	if e.Kind == rdma.EvCMIDDestroy && k.Bound() {
		return // rdma_destroy_id of a bound ID: its restrack del follows
	}
	old, found := a.objs[k]
	switch {
	case found && old.live:
		a.drop(k, old)
		a.each(old.owner, old.dev, func(s *slot) { s.Destroys++ })
	case found:
		old.dead, old.deadMono = true, e.Mono
		a.objs[k] = old
		a.each(o, d, func(s *slot) { s.Destroys++ })
	default:
		// Not known: made before the start and not listed, or its create
		// is still on its way from another CPU.
		if len(a.objs) < a.maxObjects {
			a.objs[k] = obj{owner: -1, dev: -1, state: noState, dead: true, deadMono: e.Mono, typ: e.Type}
			a.pend = append(a.pend, pending{k, a.frames})
		}
		a.each(o, d, func(s *slot) { s.Destroys++ })
	}
}

// drop takes a live object out of its rows.
func (a *Aggregator) drop(k restable.Key, old obj) {
	delete(a.objs, k)
	a.each(old.owner, old.dev, func(s *slot) {
		if int(old.typ) < numTypes {
			s.Live[old.typ]--
		}
		if old.typ == rdma.ResQP {
			s.QPs[old.state]--
		}
	})
}

// modify moves a QP to its new state.
func (a *Aggregator) modify(e *rdma.Event) {
	if e.Type != rdma.ResQP || !e.Given(rdma.HasState) || int(e.QPState) >= noState {
		return
	}
	k, ok := restable.KeyOf(e)
	if !ok {
		return
	}
	old, found := a.objs[k]
	switch {
	case !found:
		if len(a.objs) < a.maxObjects {
			a.objs[k] = obj{owner: -1, dev: -1, state: uint8(e.QPState), stateMono: e.Mono, typ: rdma.ResQP}
			a.pend = append(a.pend, pending{k, a.frames})
		}
		return
	case e.Mono < old.stateMono:
		return // older than what it says already
	}
	from, to := old.state, uint8(e.QPState)
	old.state, old.stateMono = to, e.Mono
	a.objs[k] = old
	if old.live && from != to {
		a.each(old.owner, old.dev, func(s *slot) { s.QPs[from]--; s.QPs[to]++ })
	}
}

// sweep lets go the entries of events whose create never came.
func (a *Aggregator) sweep() {
	for a.pendHead < len(a.pend) {
		p := a.pend[a.pendHead]
		if p.frame+pendingFrames > a.frames {
			break
		}
		if o, ok := a.objs[p.key]; ok && !o.live {
			delete(a.objs, p.key)
		}
		a.pendHead++
	}
	if a.pendHead == len(a.pend) {
		a.pend, a.pendHead = a.pend[:0], 0
	} else if a.pendHead > 4096 && a.pendHead > len(a.pend)/2 {
		a.pend = append(a.pend[:0], a.pend[a.pendHead:]...)
		a.pendHead = 0
	}
}
