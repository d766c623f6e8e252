package leaks

import (
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// program follows the resources of one traced program and its children.
type program struct {
	root uint32
	// cgroup is the program's own cgroup v2 id; 0 when it has none.
	cgroup  uint64
	ours    map[uint32]bool // without a cgroup: processes known to descend from root
	theirs  map[uint32]bool // ... and known not to
	created map[restable.Key]bool
	// made and destroyed count the program's resources over the run:
	// created, and freed by itself (explicitly, or a context with its file).
	made, destroyed int
}

// Program makes the watcher follow the resources created by process pid
// (and by the processes it starts) and report those it does not destroy.
//
// cgroup is the id of the cgroup v2 the program was started in (see
// package launch). Then a resource is the program's when its owner task
// was in that cgroup at the event: the tracer reads the owner's cgroup in
// the kernel, so a child that exits at once is still seen as the
// program's, and a process that later reuses one of its PIDs is not.
// Only that cgroup counts, not cgroups below it: the cgroup belongs to
// root, so a program run as a user can neither make cgroups below it nor
// move out of it.
//
// With cgroup 0 (no cgroup v2, or the program could not be started in
// one), ancestry is read from /proc when the event is handled, up to the
// reorder window after it: a child that has exited by then is missed and
// a PID reused meanwhile is misattributed. The caller says so.
func (w *Watcher) Program(pid uint32, cgroup uint64) {
	w.program = &program{root: pid, cgroup: cgroup, ours: map[uint32]bool{pid: true}, theirs: map[uint32]bool{},
		created: map[restable.Key]bool{}}
}

// owns tells whether the program created the resource of event e.
func (p *program) owns(w *Watcher, e *rdma.Event) bool {
	if !e.Has(rdma.EvHasOwner) {
		return false
	}
	if p.cgroup != 0 {
		return e.OwnerCgroup == p.cgroup
	}
	return p.belongs(w, e.Owner.PID)
}

// belongs tells whether process pid is the program or one of its
// descendants, from /proc: only right while the process still runs.
func (p *program) belongs(w *Watcher, pid uint32) bool {
	if p.ours[pid] {
		return true
	}
	if p.theirs[pid] || pid == 0 {
		return false
	}
	chain := []uint32{pid}
	for q, depth := w.Procs.ParentPID(pid), 0; q > 1 && depth < 32; q, depth = w.Procs.ParentPID(q), depth+1 {
		if p.ours[q] {
			for _, c := range chain {
				p.ours[c] = true
			}
			return true
		}
		chain = append(chain, q)
	}
	p.theirs[pid] = true
	return false
}

// added records a new resource if the program created it (a reused id:
// the new resource decides).
func (p *program) added(w *Watcher, ent *restable.Entry) {
	delete(p.created, ent.Key)
	if ent.Res.Type == rdma.ResCMID && ent.Bound() {
		// An ID the program created unbound is bound now: the same one.
		unbound := restable.Key{Dev: restable.NoDevice, Res: rdma.ResCMID, Num: ent.Res.Obj}
		if p.created[unbound] {
			delete(p.created, unbound)
			p.created[ent.Key] = true
			return
		}
	}
	if p.owns(w, ent.Res.Event()) {
		p.created[ent.Key] = true
		p.made++
	}
}

func (p *program) forget(k restable.Key) { delete(p.created, k) }

// removed judges a destroy by its path: an explicit destroy is fine;
// cleanup at exit or at the close of the device file means the program
// left the resource behind. A user context is the open device file itself
// and ends with it, so its cleanup is no leak.
func (p *program) removed(w *Watcher, ent *restable.Entry, e *rdma.Event) {
	if !p.created[ent.Key] {
		return
	}
	delete(p.created, ent.Key)
	c := e.Cleanup()
	if c == "" || ent.Res.Type == rdma.ResCTX {
		p.destroyed++
	}
	if c != "" && ent.Res.Type != rdma.ResCTX {
		f := &rdma.Finding{Report: rdma.LeakExitCleanup, Time: e.Time, Res: *ent.Res.Event(), Age: e.Time.Sub(ent.Created)}
		f.Res.Flags |= e.Flags & (rdma.EvActorExiting | rdma.EvFileClose)
		f.Res.Actor = e.Actor
		if w.Keep(&f.Res) {
			w.leaked++
			w.emit(f)
		}
	}
}

// ProgramCounts is how many resources the traced program (children
// included) created, and how many of them it destroyed itself.
func (w *Watcher) ProgramCounts() (created, destroyed int) {
	if w.program == nil {
		return 0, 0
	}
	return w.program.made, w.program.destroyed
}

// ProgramExited reports what the program created that is still alive.
// Call it once the program has exited and its cleanup events are in.
func (w *Watcher) ProgramExited(now time.Time) {
	p := w.program
	if p == nil {
		return
	}
	for _, ent := range w.Table.Select(func(ent *restable.Entry) bool { return p.created[ent.Key] }) {
		if w.Keep(ent.Res.Event()) {
			w.leaked++
			w.emitEntry(rdma.LeakAlive, ent, now, rdma.Owner{})
		}
	}
}
