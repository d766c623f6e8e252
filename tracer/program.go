package tracer

import (
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// programCgroup is the id each event's owner cgroup is compared with; 0
// when the program has no cgroup.
func programCgroup(p *launch.Program) uint64 {
	if p.Cgroup == nil {
		return 0
	}
	return p.Cgroup.ID
}

// programOwns says whether an event's object is the program's or its
// children's: its owner was in the program's cgroup when it happened, or,
// without a cgroup, descends from the program now (from /proc).
func programOwns(p *launch.Program) func(*rdma.Event) bool {
	root := uint32(p.Cmd.Process.Pid)
	if cg := programCgroup(p); cg != 0 {
		return func(e *rdma.Event) bool { return e.Has(rdma.EvHasOwner) && e.OwnerCgroup == cg }
	}
	var procs proc.CommCache
	return func(e *rdma.Event) bool {
		for q, depth := e.Owner.PID, 0; e.Has(rdma.EvHasOwner) && q > 1 && depth < 32; q, depth = procs.ParentPID(q), depth+1 {
			if q == root {
				return true
			}
		}
		return false
	}
}
