// Package leaks turns the live resource table and the traced events into
// leak reports: what is alive when a device unregisters (and which
// processes the kernel waits for), what is left when it finishes, what is
// alive at the end of a run, and what a traced program left for the kernel
// to clean up.
package leaks

import (
	"sort"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Watcher reports on events given to Handle in timestamp order.
type Watcher struct {
	Table *restable.Table
	// Keep selects the resources reports name (the tracer's filters).
	Keep func(*rdma.Event) bool
	// Emit receives each finding.
	Emit func(*rdma.Finding)
	// Procs looks up open device files and parents; SysRoot is /sys.
	Procs   *proc.CommCache
	SysRoot string
	// Interval between "waiting" lines of a blocked unregistration.
	Interval time.Duration
	// MaxBlocked is how long an unregistration may wait for the owners
	// of what is on the device: what is freed later held it, and counts
	// as leaked.
	MaxBlocked time.Duration

	unreg   map[uint32]*unregistration
	program *program
	leaked  int
	// smcLinks are the SMC-R links whose QPs the trace saw created: an
	// [smc] QP is named by its link group, not only [smc].
	smcLinks map[smcQP]rdma.SMCLink
}

// smcQP is an SMC-R link's QP: device index and lqpn.
type smcQP struct{ dev, lqpn uint32 }

// unregistration is a device whose unregistration has begun.
type unregistration struct {
	dev rdma.Event // the dev_unregister event
	// alive holds what was alive when it began and is still alive; true
	// for what the filters keep.
	alive   map[restable.Key]bool
	freed   int
	atExit  int
	byUnreg int
	// late counts the kept resources that were alive when it began and
	// that their owners freed MaxBlocked or more after: they held it.
	late     int
	lastWait time.Time
}

// New returns a watcher over table.
func New(table *restable.Table, emit func(*rdma.Finding)) *Watcher {
	return &Watcher{Table: table, Emit: emit, Keep: func(*rdma.Event) bool { return true },
		Procs: &proc.CommCache{}, Interval: 5 * time.Second, MaxBlocked: DefaultMaxBlocked,
		unreg: map[uint32]*unregistration{}}
}

// DefaultMaxBlocked is Watcher.MaxBlocked unless set: far longer than a
// removal whose owners let go at once takes, even emulated (soft-RoCE
// under qemu without KVM: NVMe over RDMA's host and target, connected, in
// 0.15 to 0.45 s; NFS over RDMA's in 0.03 s), and far shorter than the
// kernel's hung-task report (120 s).
const DefaultMaxBlocked = 10 * time.Second

// Leaked is the number of leaks reported so far: what a device's
// unregistration never freed (the kernel dropped it); what held an
// unregistration MaxBlocked or longer (alive when it began and freed later
// than that, or still alive when the run ended that long after it began),
// or the unregistration itself when nothing it waited for is known; and
// what a traced program left behind. A removal in which the owners freed
// everything in time is no leak, whoever freed it: the unregistering task,
// a module's workqueue, a process told of the removal. What is alive when
// a watch without a program ends is listed as alive, not leaked: a
// listener, ib_core's own objects, a program still running.
func (w *Watcher) Leaked() int { return w.leaked }

func (w *Watcher) emit(f *rdma.Finding) { w.Emit(f) }

func (w *Watcher) emitEntry(r rdma.LeakReport, ent *restable.Entry, now time.Time, by rdma.Owner) {
	f := &rdma.Finding{Report: r, Time: now, Res: *ent.Res.Event(), Age: ent.Age(now), AgeAtLeast: ent.PreExisting, By: by}
	if l, ok := w.smcLinks[smcQP{ent.Dev, ent.Res.LQPN}]; ok && ent.Res.Type == rdma.ResQP && ent.Res.Owner.KernName == "smc" {
		l.State = "" // the link's state when it was made, not now
		f.Res.SMC = l
	}
	w.emit(f)
}

// Handle applies one event.
func (w *Watcher) Handle(e *rdma.Event) {
	switch e.Kind {
	case rdma.EvDevUnregister:
		w.beginUnregister(e)
		return
	case rdma.EvDevUnregistered:
		w.endUnregister(e)
		return
	case rdma.EvSMCLinkCreate:
		if e.Given(rdma.HasLQPN) && e.Status == 0 && e.SMC.HasLGR {
			if w.smcLinks == nil {
				w.smcLinks = map[smcQP]rdma.SMCLink{}
			}
			w.smcLinks[smcQP{e.DevIndex, e.LQPN}] = e.SMC
		}
		return
	case rdma.EvSMCLinkDestroy:
		delete(w.smcLinks, smcQP{e.DevIndex, e.LQPN})
		return
	case rdma.EvSMCLinkDown:
		return
	case rdma.EvPortBusy:
		// Not a resource: a port someone else held. With a program,
		// only its own failures are its report's.
		if w.program == nil || w.program.owns(w, e) {
			w.emit(&rdma.Finding{Report: rdma.LeakPortBusy, Time: e.Time, Res: *e})
		}
		return
	}
	op, ent := w.Table.Apply(e)
	switch op {
	case restable.OpAdded, restable.OpReplaced:
		if w.program != nil {
			w.program.added(w, ent)
		}
	case restable.OpRemoved:
		if u := w.unreg[ent.Dev]; u != nil && u.has(ent.Key) {
			u.freed++
			byUnreg := false
			switch {
			case e.Cleanup() != "":
				u.atExit++
			case e.Actor.TID == u.dev.Actor.TID:
				u.byUnreg++
				byUnreg = true // the kernel's own teardown: it waited for the others
			}
			if u.alive[ent.Key] && !byUnreg && e.Time.Sub(u.dev.Time) >= w.MaxBlocked {
				u.late++
			}
			delete(u.alive, ent.Key)
		}
		if w.program != nil {
			w.program.removed(w, ent, e)
		}
	}
}

// beginUnregister names everything alive on the device.
func (w *Watcher) beginUnregister(e *rdma.Event) {
	u := &unregistration{dev: *e, alive: map[restable.Key]bool{}, lastWait: e.Time}
	w.unreg[e.DevIndex] = u
	for _, ent := range w.Table.Select(func(ent *restable.Entry) bool { return ent.Dev == e.DevIndex }) {
		u.alive[ent.Key] = w.Keep(ent.Res.Event())
		if u.alive[ent.Key] {
			w.emitEntry(rdma.LeakUnregister, ent, e.Time, e.Actor)
		}
	}
}

// Tick reports, every Interval, what a blocked unregistration waits for:
// each holder of resources still alive on the device, a process (with its
// open RDMA device files) or a kernel module, and what it holds.
func (w *Watcher) Tick(now time.Time) {
	for _, idx := range w.blocked() {
		u := w.unreg[idx]
		if now.Sub(u.lastWait) < w.Interval {
			continue
		}
		u.lastWait = now
		base := rdma.Finding{Report: rdma.LeakWaiting, Time: now, Blocked: now.Sub(u.dev.Time), By: u.dev.Actor}
		base.Res = rdma.Event{Kind: rdma.EvDevUnregister, Resource: rdma.Resource{DevIndex: idx, DevName: u.dev.DevName}, Flags: rdma.EvHasDev}
		hs := holdersOf(w.Table.Select(func(ent *restable.Entry) bool { return ent.Dev == idx }))
		if len(hs) == 0 {
			f := base // waiting, but not for anything rdmatrace knows of
			w.emit(&f)
		}
		for _, h := range hs {
			f := base
			f.Res.Owner = h.owner
			if h.owner.KernName == "" {
				f.Res.Flags |= rdma.EvHasOwner
				f.Files = w.Procs.RDMAFiles(h.owner.PID, w.SysRoot)
			}
			f.Resources, f.Held = h.n, h.held
			w.emit(&f)
		}
	}
}

// holder is one owner of resources on a device: a process or a module.
type holder struct {
	owner rdma.Owner
	n     int
	held  []rdma.ResCount
}

// holdersOf groups entries, sorted by owner (restable.Sort), by holder:
// processes by PID, then kernel modules by name.
func holdersOf(ents []*restable.Entry) []holder {
	var out []holder
	for _, ent := range ents {
		o := rdma.Owner{KernName: ent.Res.Owner.KernName}
		if ent.Res.Has(rdma.EvHasOwner) {
			o = rdma.Owner{PID: ent.Res.Owner.PID, TID: ent.Res.Owner.PID, Comm: ent.Res.Owner.Comm}
		} else if o.KernName == "ib_core" {
			// Its own GSI and SMI QPs (and their PD and CQ): the MAD
			// client is removed last, by the unregistration itself,
			// once the others have let go. They wait; they do not hold.
			continue
		} else if o.KernName == "" {
			o.KernName = "?" // a kernel object whose module the tracer could not read
		}
		if n := len(out); n == 0 || out[n-1].owner.PID != o.PID || out[n-1].owner.KernName != o.KernName {
			out = append(out, holder{owner: o})
		}
		h := &out[len(out)-1]
		h.n++
		if i := len(h.held) - 1; i >= 0 && h.held[i].Res == ent.Res.Type {
			h.held[i].N++
		} else {
			h.held = append(h.held, rdma.ResCount{Res: ent.Res.Type, N: 1})
		}
	}
	return out
}

func (w *Watcher) blocked() []uint32 {
	out := make([]uint32, 0, len(w.unreg))
	for idx := range w.unreg {
		out = append(out, idx)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (u *unregistration) has(k restable.Key) bool { _, ok := u.alive[k]; return ok }

// held counts the kept resources still holding the unregistration.
func (u *unregistration) held() int {
	n := 0
	for _, kept := range u.alive {
		if kept {
			n++
		}
	}
	return n
}

// endUnregister reports what the device left behind and sums up.
func (w *Watcher) endUnregister(e *rdma.Event) {
	u := w.unreg[e.DevIndex]
	delete(w.unreg, e.DevIndex)
	left := w.Table.RemoveDevice(e.DevIndex)
	for _, ent := range left {
		if w.Keep(ent.Res.Event()) {
			w.leaked++
			w.emitEntry(rdma.LeakLeft, ent, e.Time, e.Actor)
		}
		if w.program != nil {
			w.program.forget(ent.Key)
		}
	}
	if u != nil && e.Time.Sub(u.dev.Time) >= w.MaxBlocked {
		switch {
		case u.late > 0:
			w.leaked += u.late
		case len(left) == 0 && w.Keep(&u.dev):
			w.leaked++ // blocked, on something the trace does not show
		}
	}
	f := &rdma.Finding{Report: rdma.LeakUnregistered, Time: e.Time, Res: *e, Left: len(left), By: e.Actor}
	if u != nil {
		f.Took = e.Time.Sub(u.dev.Time)
		f.Freed, f.FreedAtExit, f.FreedByUnregister = u.freed, u.atExit, u.byUnreg
	}
	w.emit(f)
}

// End reports what is alive when the run ends: listed, not leaked. A
// leak is what holds a device's unregistration that began MaxBlocked or
// longer before now, as endUnregister would have said.
func (w *Watcher) End(now time.Time) {
	for _, idx := range w.blocked() {
		u := w.unreg[idx]
		if now.Sub(u.dev.Time) < w.MaxBlocked {
			continue // not held past its time yet
		}
		switch n := u.held(); {
		case n > 0:
			w.leaked += n // still holding it
		case w.Keep(&u.dev):
			w.leaked++ // blocked, on something the trace does not show
		}
	}
	for _, ent := range w.Table.Select(func(ent *restable.Entry) bool { return w.Keep(ent.Res.Event()) }) {
		w.emitEntry(rdma.LeakEnd, ent, now, rdma.Owner{})
	}
}
