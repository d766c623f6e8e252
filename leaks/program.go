package leaks

import (
	"time"

	"github.com/rdmatrace/rdmatrace/rdma"
	"github.com/rdmatrace/rdmatrace/restable"
)

// program follows the resources of one traced program and its children.
type program struct {
	root    uint32
	ours    map[uint32]bool // processes known to descend from root
	theirs  map[uint32]bool // processes known not to
	created map[restable.Key]bool
}

// Program makes the watcher follow the resources created by process pid
// (and by the processes it starts) and report those it does not destroy.
func (w *Watcher) Program(pid uint32) {
	w.program = &program{root: pid, ours: map[uint32]bool{pid: true}, theirs: map[uint32]bool{},
		created: map[restable.Key]bool{}}
}

// belongs tells whether process pid is the program or one of its
// descendants. Events are read while their process still runs, so /proc
// can tell its ancestry.
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
	if ent.Res.Has(rdma.EvHasOwner) && p.belongs(w, ent.Res.Owner.PID) {
		p.created[ent.Key] = true
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
	if c := e.Cleanup(); c != "" && ent.Res.Res != rdma.ResCTX {
		f := &rdma.Finding{Report: rdma.LeakExitCleanup, Time: e.Time, Res: ent.Res, Age: e.Time.Sub(ent.Created)}
		f.Res.Flags |= e.Flags & (rdma.EvActorExiting | rdma.EvFileClose)
		f.Res.Actor = e.Actor
		if w.Keep(&f.Res) {
			w.leaked++
			w.emit(f)
		}
	}
}

// ProgramExited reports what the program created that is still alive.
// Call it once the program has exited and its cleanup events are in.
func (w *Watcher) ProgramExited(now time.Time) {
	p := w.program
	if p == nil {
		return
	}
	for _, ent := range w.Table.Select(func(ent *restable.Entry) bool { return p.created[ent.Key] }) {
		if w.Keep(&ent.Res) {
			w.leaked++
			w.emitEntry(rdma.LeakAlive, ent, now, rdma.Owner{})
		}
	}
}
