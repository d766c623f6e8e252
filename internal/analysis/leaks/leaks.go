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
	// alive holds what was alive when it began, less what the
	// unregistration freed itself; true for what the filters keep.
	alive    map[restable.Key]bool
	freed    int
	atExit   int
	byUnreg  int
	lastWait time.Time
}

// New returns a watcher over table.
func New(table *restable.Table, emit func(*rdma.Finding)) *Watcher {
	return &Watcher{Table: table, Emit: emit, Keep: func(*rdma.Event) bool { return true },
		Procs: &proc.CommCache{}, Interval: 5 * time.Second, unreg: map[uint32]*unregistration{}}
}

// Leaked is the number of leaks reported so far: resources that held a
// device's unregistration (alive when it began, and not freed by the
// unregistration itself, as ib_core frees its own GSI QPs) or that it never
// freed; resources created during the run and alive at its end; and what a
// traced program left behind.
func (w *Watcher) Leaked() int { return w.leaked }

func (w *Watcher) emit(f *rdma.Finding) { w.Emit(f) }

func (w *Watcher) emitEntry(r rdma.LeakReport, ent *restable.Entry, now time.Time, by rdma.Owner) {
	f := &rdma.Finding{Report: r, Time: now, Res: ent.Res, Age: ent.Age(now), AgeAtLeast: ent.PreExisting, By: by}
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
			switch {
			case e.Cleanup() != "":
				u.atExit++
			case e.Actor.TID == u.dev.Actor.TID:
				u.byUnreg++
				delete(u.alive, ent.Key) // the kernel's own teardown: no leak
			}
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
		u.alive[ent.Key] = w.Keep(&ent.Res)
		if u.alive[ent.Key] {
			w.emitEntry(rdma.LeakUnregister, ent, e.Time, e.Actor)
		}
	}
}

// Tick reports, every Interval, the processes a blocked unregistration
// waits for: the owners of user resources still alive on the device.
func (w *Watcher) Tick(now time.Time) {
	for _, idx := range w.blocked() {
		u := w.unreg[idx]
		if now.Sub(u.lastWait) < w.Interval {
			continue
		}
		u.lastWait = now
		count := map[uint32]int{}
		comm := map[uint32]string{}
		for _, ent := range w.Table.Select(func(ent *restable.Entry) bool {
			return ent.Dev == idx && ent.Res.Has(rdma.EvHasOwner)
		}) {
			count[ent.Res.Owner.PID]++
			comm[ent.Res.Owner.PID] = ent.Res.Owner.Comm
		}
		pids := make([]uint32, 0, len(count))
		for pid := range count {
			pids = append(pids, pid)
		}
		sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
		base := rdma.Finding{Report: rdma.LeakWaiting, Time: now, Blocked: now.Sub(u.dev.Time), By: u.dev.Actor}
		base.Res = rdma.Event{Kind: rdma.EvDevUnregister, Resource: rdma.Resource{DevIndex: idx, DevName: u.dev.DevName}, Flags: rdma.EvHasDev}
		if len(pids) == 0 {
			f := base // waiting, but not for a process rdmatrace knows
			w.emit(&f)
		}
		for _, pid := range pids {
			f := base
			f.Res.Owner = rdma.Owner{PID: pid, TID: pid, Comm: comm[pid]}
			f.Res.Flags |= rdma.EvHasOwner
			f.Resources = count[pid]
			f.Files = w.Procs.RDMAFiles(pid, w.SysRoot)
			w.emit(&f)
		}
	}
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

// held counts the kept resources that held the unregistration.
func (u *unregistration) held() int {
	n := 0
	for _, kept := range u.alive {
		if kept {
			n++
		}
	}
	return n
}

// aliveAtStart tells whether k was alive when the unregistration began
// (and was not freed by it), and whether the filters keep it.
func (u *unregistration) aliveAtStart(k restable.Key) (kept, ok bool) {
	if u == nil {
		return false, false
	}
	kept, ok = u.alive[k]
	return kept, ok
}

// endUnregister reports what the device left behind and sums up.
func (w *Watcher) endUnregister(e *rdma.Event) {
	u := w.unreg[e.DevIndex]
	delete(w.unreg, e.DevIndex)
	left := w.Table.RemoveDevice(e.DevIndex)
	if u != nil {
		w.leaked += u.held()
	}
	for _, ent := range left {
		_, counted := u.aliveAtStart(ent.Key)
		if w.Keep(&ent.Res) && !counted {
			w.leaked++
		}
		if w.Keep(&ent.Res) {
			w.emitEntry(rdma.LeakLeft, ent, e.Time, e.Actor)
		}
		if w.program != nil {
			w.program.forget(ent.Key)
		}
	}
	f := &rdma.Finding{Report: rdma.LeakUnregistered, Time: e.Time, Res: *e, Left: len(left), By: e.Actor}
	if u != nil {
		f.Took = e.Time.Sub(u.dev.Time)
		f.Freed, f.FreedAtExit, f.FreedByUnregister = u.freed, u.atExit, u.byUnreg
	}
	w.emit(f)
}

// End reports what is alive when the run ends. What existed before the
// run is listed but is not a leak of the run (ib_core's own QPs live as
// long as their device).
func (w *Watcher) End(now time.Time) {
	for _, idx := range w.blocked() {
		w.leaked += w.unreg[idx].held() // still holding an unregistration
	}
	for _, ent := range w.Table.Select(func(ent *restable.Entry) bool { return w.Keep(&ent.Res) }) {
		w.emitEntry(rdma.LeakEnd, ent, now, rdma.Owner{})
		if !ent.PreExisting && w.unreg[ent.Dev] == nil {
			w.leaked++
		}
	}
}
