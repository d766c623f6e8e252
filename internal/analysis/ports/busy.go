package ports

import (
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// HolderLookup names who holds the port a port-busy event could not have,
// as it is now, in a dump of every socket and rdma_cm ID (Gather). A
// program that loops on a failing bind would otherwise cost a full
// sock_diag and RDMA netlink dump per failure: a dump that has a holder
// of the port is used again for a second, and a new dump is made at most
// every 100 ms even when none has one. The process holding a socket is
// found in an index by the socket's inode that the lookup keeps between
// events (proc.SocketIndex): every process's open files are read once, and
// again only for a socket not seen yet. Its Names is what
// enrich.Options.Holders takes; the tracer calls it off its reader's path.
type HolderLookup struct {
	reuse  time.Duration // a dump that answers is used again this long
	least  time.Duration // between two dumps, whatever they answer
	gather func() (Input, error)
	now    func() time.Time
	procs  Procs // names the holders; nil: a holderProcs of /proc, made at the first lookup

	mu    sync.Mutex
	at    time.Time
	in    Input
	dumps int // how many it made (for tests)
}

// NewHolderLookup looks holders up in Gather's dumps.
func NewHolderLookup() *HolderLookup {
	return &HolderLookup{reuse: time.Second, least: 100 * time.Millisecond, gather: Gather, now: time.Now}
}

// holderProcs names a port's holders for a HolderLookup: the process of a
// socket from the index it keeps, its name and process (of a thread) read
// at each lookup, as they are now.
type holderProcs struct {
	index *proc.SocketIndex
	root  string // "" for /proc
}

func newHolderProcs(root string) *holderProcs {
	return &holderProcs{index: &proc.SocketIndex{Root: root}, root: root}
}

func (p *holderProcs) SocketOwners(inodes map[uint64]bool) map[uint64]uint32 {
	return p.index.SocketOwners(inodes)
}

func (p *holderProcs) Comm(pid uint32) string {
	c := proc.CommCache{Root: p.root}
	return c.Comm(pid)
}

func (p *holderProcs) TGID(tid uint32) uint32 {
	c := proc.CommCache{Root: p.root}
	return c.TGID(tid)
}

// Names names who holds the port that e's bind, rdma_listen or
// rdma_connect could not have, as it is now (a moment after the failure):
// "python3[300] tcp LISTEN 0.0.0.0:7400". The failing rdma_cm ID itself
// (bound, in rdma_cm's space) is left out. Empty, not nil, when no one
// holds it any more.
func (h *HolderLookup) Names(e *rdma.Event) []string {
	out := []string{}
	if !e.Src.IsValid() || e.Src.Port() == 0 {
		return out
	}
	port := e.Src.Port()
	onPort := func(all Input) Input {
		in := Input{IWarp: all.IWarp, SMC: all.SMC}
		for _, s := range all.Sockets {
			if s.Src.Port() == port {
				in.Sockets = append(in.Sockets, s)
			}
		}
		for _, r := range all.CMIDs {
			if r.Src.Port() == port && !(e.Has(rdma.EvHasRes) && r.DevName == e.DevName && r.CMIDN == e.ID) {
				in.CMIDs = append(in.CMIDs, r)
			}
		}
		return in
	}
	in := onPort(h.get(false))
	if len(in.Sockets)+len(in.CMIDs) == 0 { // a holder newer than the dump?
		in = onPort(h.get(true))
	}
	for _, r := range Holders(Join(in, h.namer()), "tcp", e.Src) {
		who := Owner(&r)
		if who == "" {
			who = "?"
		}
		out = append(out, who+" "+r.Stack+" "+r.State+" "+r.Src.String())
	}
	return out
}

// namer is what names the holders: the lookup's own, kept between events.
func (h *HolderLookup) namer() Procs {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.procs == nil {
		h.procs = newHolderProcs("")
	}
	return h.procs
}

// get returns the last dump if it is younger than least, or younger than
// reuse when the caller does not need a fresher one; else a new dump. Its
// result is shared: callers must not change it.
func (h *HolderLookup) get(fresher bool) Input {
	h.mu.Lock()
	defer h.mu.Unlock()
	age := h.now().Sub(h.at)
	if h.dumps > 0 && age >= 0 && (age < h.least || !fresher && age < h.reuse) {
		return h.in
	}
	h.in, _ = h.gather() // what could be read; a holder not found is shown as none
	h.at = h.now()
	h.dumps++
	return h.in
}
