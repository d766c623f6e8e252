// Package enrich names the owners of RDMA objects and events: a process's
// name (comm), its process (tgid) when the kernel names a thread, its
// cgroup, container, pod, pid and network namespaces, and the process that
// holds a socket (an SMC socket, a port). It also goes the other way: the
// place filters (cgroup, container, pod) become the cgroup ids the kernel
// filters by (CgroupSelector).
//
// It is the one place that reads /proc and the cgroup tree to name an
// owner, as ptcpdump's internal/metadata is: the netlink inventory, the
// tracer (Options.Enrich), ps, ports, smc and the exporter all ask it.
package enrich

import (
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"

	"github.com/rdmatrace/rdmatrace/internal/host/podnames"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Options say where an Enricher looks and what it adds to events.
type Options struct {
	ProcRoot   string // "" for /proc
	CgroupRoot string // "" for the cgroup v2 mount (none: no cgroup ids are resolved)
	// PodLogDir is where the kubelet keeps its pods' logs, whose
	// directories name the pods of their UIDs ("" for /var/log/pods).
	PodLogDir string
	// SMCOwners: Event names the process holding the socket of an SMC
	// fallback event that came without one (its inode's holder, from
	// /proc/PID/fd: the server side falls back in a kworker).
	SMCOwners bool
}

// Enricher names owners; it keeps what it learned (at most maxPlaces
// processes; past that it starts again). Its methods may be called from
// several goroutines.
type Enricher struct {
	opts Options

	mu     sync.Mutex
	procs  proc.CommCache // comms, read once per pid
	places *placeCache    // made at the first Place: most commands never ask
	pods   *podnames.Names
	// rdmacgSince and rdmacgReads bound RDMACgroupLimit's reads.
	rdmacgSince time.Time
	rdmacgReads int
}

// New makes an Enricher. It reads nothing until asked.
func New(opts Options) *Enricher {
	return &Enricher{opts: opts, procs: proc.CommCache{Root: opts.ProcRoot}}
}

// Comm is the name of pid (a process or a thread), "" when it has exited
// or is not visible. The kernel reports only a pid for user objects; like
// iproute2, we name it.
func (x *Enricher) Comm(pid uint32) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.procs.Len() >= maxPlaces {
		x.procs = proc.CommCache{Root: x.opts.ProcRoot}
	}
	return x.procs.Comm(pid)
}

// TGID is the process (thread group) of thread tid, 0 when it cannot be
// read. RDMA netlink names the thread that created an object.
func (x *Enricher) TGID(tid uint32) uint32 { return x.reader().TGID(tid) }

// ParentPID is the parent of pid, 0 when it cannot be read.
func (x *Enricher) ParentPID(pid uint32) uint32 { return x.reader().ParentPID(pid) }

// RDMAFiles lists the /dev/infiniband files pid holds open (see
// proc.CommCache.RDMAFiles); sys is the sysfs root, "" for /sys.
func (x *Enricher) RDMAFiles(pid uint32, sys string) []string {
	return x.reader().RDMAFiles(pid, sys)
}

// SocketOwners finds the processes holding the sockets with these inodes
// open: inode -> the lowest such pid. It reads every process's files.
func (x *Enricher) SocketOwners(inodes map[uint64]bool) map[uint64]uint32 {
	return x.reader().SocketOwners(inodes)
}

// reader reads /proc without the comm cache (facts that change).
func (x *Enricher) reader() *proc.CommCache { return &proc.CommCache{Root: x.opts.ProcRoot} }

// Place says where process pid runs (cgroup, container, pod, pid and
// network namespaces); cgroupID, when not 0, is the cgroup an event ran
// in (from BPF), which names it even after the process has gone. nil when
// nothing is known. One answer per process and cgroup is kept and shared:
// events carry it without allocating.
func (x *Enricher) Place(pid uint32, cgroupID uint64) *rdma.Placement {
	if pid == 0 && cgroupID == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.places == nil {
		x.places = newPlaceCache(x.opts.ProcRoot, x.opts.CgroupRoot, x.podNamesLocked())
	}
	return x.places.place(pid, cgroupID)
}

// podNames is the run's one lookup of pod names, made at the first ask.
func (x *Enricher) podNames() *podnames.Names {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.podNamesLocked()
}

func (x *Enricher) podNamesLocked() *podnames.Names {
	if x.pods == nil {
		x.pods = podnames.New(x.opts.PodLogDir)
	}
	return x.pods
}

// Resource names the owner of a resource from RDMA netlink: a process's
// comm and place (from the pid the kernel gives, the creating thread's, as
// iproute2 shows it). A kernel module's objects are left as they are.
func (x *Enricher) Resource(r *rdma.Resource) {
	if r.Owner.Kernel() {
		return
	}
	r.Owner.Comm = x.Comm(r.Owner.PID)
	r.Owner.Place = x.Place(r.Owner.PID, 0)
}

// Process is the owner an event gives a resource from RDMA netlink: the
// kernel names the creating thread (TID); PID is its process, when /proc
// says, and the place is the process's. Comm is the thread's, as netlink's
// listings show it. A kernel module's object has only KernName.
func (x *Enricher) Process(r *rdma.Resource) rdma.Owner {
	if r.Owner.Kernel() || r.Owner.PID == 0 {
		return rdma.Owner{KernName: r.Owner.KernName}
	}
	o := rdma.Owner{PID: r.Owner.PID, TID: r.Owner.PID, Comm: r.Owner.Comm}
	if o.Comm == "" {
		o.Comm = x.Comm(r.Owner.PID)
	}
	if tgid := x.TGID(r.Owner.PID); tgid != 0 {
		o.PID = tgid
	}
	o.Place = x.Place(o.PID, 0)
	return o
}

// Event names an event's owner as it comes from the tracer: where it runs
// (from its pid and the cgroup BPF saw). With Options.SMCOwners an SMC
// fallback event without an owner gets its socket's. What others know of
// an event (a busy port's holders) is added by Then's stages.
func (x *Enricher) Event(e *rdma.Event) {
	if e.Has(rdma.EvHasOwner) {
		e.Owner.Place = x.Place(e.Owner.PID, e.OwnerCgroup)
	}
	if x.opts.SMCOwners && e.Kind == rdma.EvSMCFallback && e.Inode != 0 && !e.Has(rdma.EvHasOwner) {
		x.SMCOwner(e)
	}
	if e.Kind == rdma.EvCallFail && e.CallFail.Limit.Kind == rdma.LimitRDMACgroup && e.CallFail.Limit.Cgroup == nil {
		x.RDMACgroupLimit(e)
	}
}

// RDMACgroupLimit names the rdma cgroup that refused a failed call, with
// its rdma.max and rdma.current as they are now (the refused object was
// never charged, so a cgroup at its limit reads max in use). At most
// rdmacgReadsPerSec lookups a second: a program retrying a refused create
// in a loop must not have the tracer read files for each.
func (x *Enricher) RDMACgroupLimit(e *rdma.Event) {
	if !e.Has(rdma.EvHasOwner) || e.Owner.Place == nil || !e.Has(rdma.EvHasDev) {
		return
	}
	x.mu.Lock()
	now := time.Now()
	if now.Sub(x.rdmacgSince) >= time.Second {
		x.rdmacgSince, x.rdmacgReads = now, 0
	}
	x.rdmacgReads++
	over := x.rdmacgReads > rdmacgReadsPerSec
	x.mu.Unlock()
	if over {
		return
	}
	root := x.opts.CgroupRoot
	if root == "" {
		var err error
		if root, err = cgroup.Mount(); err != nil {
			return
		}
	}
	l := &e.CallFail.Limit
	if got, ok := cgroup.RDMALimitReached(root, e.Owner.Place.Cgroup, e.DevName, l.CgroupRes); ok {
		l.Cgroup = &rdma.RDMACgroupUse{Path: got.Path, Max: got.Max, Current: got.Current}
	}
}

const rdmacgReadsPerSec = 20

// SMCOwner names the process that holds the SMC socket of a fallback
// event, by its inode: the server side falls back in a kworker, so the
// task that ran says nothing. A socket not accepted yet has no process.
// The comm is read now, not from the cache: the socket's holder is
// looked up now too.
func (x *Enricher) SMCOwner(e *rdma.Event) {
	r := x.reader()
	if pid, ok := r.SocketOwners(map[uint64]bool{e.Inode: true})[e.Inode]; ok {
		e.Owner.PID, e.Owner.TID, e.Owner.Comm = pid, pid, r.Comm(pid)
		e.Flags |= rdma.EvHasOwner
	}
}
