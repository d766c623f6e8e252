// Package qplife follows each QP's life on a node from the tracer's events
// and says who it is at each change that matters, as rdma.QPIdentity
// records for the fleet's log store: created (or found existing), connected
// (moved to RTR, its peer's GID and QPN known), failed (moved to ERR), and
// ended, with its fate: destroyed by its owner, freed at its owner's exit
// (with the exit status) or death by a signal (which), at the close of its
// device file, or by the kernel at the device's removal.
//
// The events say most of it: create, modify and destroy with the owner and
// how the destroy came about (rdma.Event.Cleanup), qp-attr with the source
// and destination GIDs. What they lack comes from beside them: the remote
// QPN from netlink (RemoteQPN), the owner's exit status from the kernel's
// process events (Exit). A Runner (runner.go) feeds those and the GID table.
package qplife

import (
	"sort"
	"sync"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Options say where the records go and how long a record waits for what
// arrives after its event.
type Options struct {
	Node string
	// Out takes each record; it must not block (the OTLP sink queues).
	Out func(*rdma.QPIdentity)
	// ExitWait is how long a QP freed at its owner's exit waits for the
	// owner's exit status (default 2 s): the kernel sends it after the
	// files are released, and the two arrive by different paths.
	ExitWait time.Duration
	// RemoteWait is how long a connected QP waits for its remote QPN
	// before it is reported without (default 3 s).
	RemoteWait time.Duration
	// MaxQPs bounds the QPs followed (default 1<<20); past it new QPs
	// are counted (Stats.Untracked) and not followed.
	MaxQPs int
}

type key struct {
	dev string
	qpn uint32
}

// life is one QP being followed.
type life struct {
	id rdma.QPIdentity
	// connected: moved to RTR; reported says the connected record went.
	connected, reported, failed bool
	remoteBy                    time.Time // report connected without the remote QPN after this
	// exitBy: freed at its owner's exit; the ended record waits for the
	// status until then.
	exitBy time.Time
}

// Tracker follows the QPs. Its methods may be called from several
// goroutines.
type Tracker struct {
	mu    sync.Mutex
	o     Options
	qps   map[key]*life
	ended []*life // freed at their owners' exits, waiting for the status
	// exits are statuses read before their QPs' destroys, by pid, kept
	// for ExitWait.
	exits         map[uint32]rdma.ExitStatus
	unregistering map[string]bool
	stats         Stats
}

// Stats count what the tracker did.
type Stats struct {
	Records   uint64 // records given to Out
	Tracked   int    // QPs followed now
	Untracked uint64 // QPs not followed: MaxQPs was reached
	// NoStatus counts QPs freed at their owner's exit whose exit status
	// did not come within ExitWait.
	NoStatus uint64
	// NoRemote counts QPs reported connected without their remote QPN.
	NoRemote uint64
}

// New makes a Tracker.
func New(o Options) *Tracker {
	if o.ExitWait <= 0 {
		o.ExitWait = 2 * time.Second
	}
	if o.RemoteWait <= 0 {
		o.RemoteWait = 3 * time.Second
	}
	if o.MaxQPs <= 0 {
		o.MaxQPs = 1 << 20
	}
	return &Tracker{o: o, qps: map[key]*life{}, exits: map[uint32]rdma.ExitStatus{}, unregistering: map[string]bool{}}
}

// Stats says what the tracker did so far.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Tracked = len(t.qps)
	return s
}

func (t *Tracker) emit(l *life, c rdma.QPChange, at time.Time) {
	l.id.Change, l.id.Time = c, at
	t.stats.Records++
	if t.o.Out != nil {
		rec := l.id
		rec.Transitions = append([]rdma.QPTransition(nil), l.id.Transitions...)
		t.o.Out(&rec)
	}
}

// Event takes the tracer's next event (in time order).
func (t *Tracker) Event(e *rdma.Event) {
	switch e.Kind {
	case rdma.EvDevUnregister, rdma.EvDevUnregistered:
		t.device(e)
		return
	}
	if e.Type != rdma.ResQP || !e.Given(rdma.HasLQPN) || !e.Has(rdma.EvHasDev) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := key{e.DevName, e.LQPN}
	l := t.qps[k]
	switch e.Kind {
	case rdma.EvCreate, rdma.EvExists:
		if l != nil && e.Kind == rdma.EvExists {
			return // known already
		}
		if l == nil && len(t.qps) >= t.o.MaxQPs {
			t.stats.Untracked++
			return
		}
		l = &life{id: rdma.QPIdentity{Node: t.o.Node, Dev: e.DevName, QPN: e.LQPN, Type: e.QPType, Created: e.Time,
			CreatedSeen: e.Kind == rdma.EvExists}}
		t.qps[k] = l
		t.fill(l, e)
		if e.Kind == rdma.EvExists {
			if e.Given(rdma.HasState) && e.QPState >= rdma.QPStateRTR {
				l.id.AddTransition(e.QPState, e.Time)
				l.connected = e.QPState != rdma.QPStateErr && e.QPState != rdma.QPStateSQE
			}
			t.emit(l, rdma.QPExists, e.Time)
			// Its remote QPN, when connected, came with it; else
			// netlink's next dump gives it.
			l.reported = l.connected && l.id.HasRemoteQPN
			l.remoteBy = e.Time.Add(t.o.RemoteWait)
			return
		}
		t.emit(l, rdma.QPCreated, e.Time)
	case rdma.EvModify:
		if l = t.seen(k, l, e, true); l == nil {
			return
		}
		t.fill(l, e)
		if !e.Given(rdma.HasState) {
			return
		}
		l.id.AddTransition(e.QPState, e.Time)
		switch e.QPState {
		case rdma.QPStateRTR, rdma.QPStateRTS:
			if !l.connected {
				l.connected, l.remoteBy = true, e.Time.Add(t.o.RemoteWait)
			}
		case rdma.QPStateErr, rdma.QPStateSQE:
			if !l.failed {
				l.failed = true
				t.reportConnected(l, e.Time)
				t.emit(l, rdma.QPFailed, e.Time)
			}
		}
		t.maybeConnected(l, e.Time)
	case rdma.EvQPAttr, rdma.EvQPError, rdma.EvAsync:
		if l = t.seen(k, l, e, true); l == nil {
			return
		}
		t.fill(l, e)
		t.maybeConnected(l, e.Time)
	case rdma.EvDestroy:
		if l = t.seen(k, l, e, false); l == nil {
			return
		}
		delete(t.qps, k)
		t.fill(l, e)
		t.end(l, e)
	}
}

// seen is the QP e is about: l when it is followed, else one that existed
// before the tracer saw it made (no snapshot, or one the ring lost), first
// seen now and reported so when report; nil when no more are followed.
func (t *Tracker) seen(k key, l *life, e *rdma.Event, report bool) *life {
	if l != nil {
		return l
	}
	if len(t.qps) >= t.o.MaxQPs {
		t.stats.Untracked++
		return nil
	}
	l = &life{id: rdma.QPIdentity{Node: t.o.Node, Dev: e.DevName, QPN: e.LQPN, Type: e.QPType, Created: e.Time, CreatedSeen: true}}
	t.qps[k] = l
	t.fill(l, e)
	if report {
		t.emit(l, rdma.QPExists, e.Time)
	}
	return l
}

// fill takes what e says of the QP: its port, owner, state, GIDs and peer.
func (t *Tracker) fill(l *life, e *rdma.Event) {
	q := &l.id
	if e.Given(rdma.HasPort) && e.Port != 0 {
		q.Port = e.Port
	}
	if e.Given(rdma.HasQPType) && e.QPType != 0 {
		q.Type = e.QPType
	}
	if e.Given(rdma.HasState) {
		q.State = e.QPState
	}
	if e.Owner.KernName != "" {
		q.Owner = rdma.Owner{KernName: e.Owner.KernName}
	} else if e.Has(rdma.EvHasOwner) && e.Owner.PID != 0 {
		// The owner as the event names it; a later event's placement
		// (found since) is kept over none.
		place := q.Owner.Place
		q.Owner = e.Owner
		if q.Owner.Place == nil {
			q.Owner.Place = place
		}
	}
	// Netlink gives an RC QP's rqpn in any state: 0 until its RTR sets
	// it. No connected QP's peer is QP 0 (the SMI's).
	if e.Given(rdma.HasRQPN) && e.RQPN != 0 {
		q.RemoteQPN, q.HasRemoteQPN = e.RQPN, true
	}
	switch e.Kind {
	case rdma.EvQPAttr:
		if e.QPAttr.HasGID {
			q.LocalGID = e.QPAttr.SGID
		}
		if e.QPAttr.HasGRH {
			q.RemoteGID = e.QPAttr.DGID
		}
	case rdma.EvQPError, rdma.EvAsync:
		if e.Fault.HasPeer() {
			if !q.RemoteGID.IsValid() {
				q.RemoteGID = e.Fault.PeerGID
			}
			if !q.HasRemoteQPN && e.Fault.PeerQPN != 0 {
				q.RemoteQPN, q.HasRemoteQPN = e.Fault.PeerQPN, true
			}
		}
	}
}

// maybeConnected reports a connected QP once its peer is known.
func (t *Tracker) maybeConnected(l *life, at time.Time) {
	if l.connected && !l.reported && l.id.HasRemoteQPN {
		t.reportConnected(l, at)
	}
}

func (t *Tracker) reportConnected(l *life, at time.Time) {
	if !l.connected || l.reported {
		return
	}
	l.reported = true
	if !l.id.HasRemoteQPN {
		t.stats.NoRemote++
	}
	t.emit(l, rdma.QPConnected, at)
}

// end reports a QP gone, or holds it for its owner's exit status.
func (t *Tracker) end(l *life, e *rdma.Event) {
	q := &l.id
	q.Ended = e.Time
	t.reportConnected(l, e.Time)
	switch {
	case e.Has(rdma.EvActorExiting) && q.Owner.KernName == "":
		q.Fate = rdma.FateOwnerExit
		if x, ok := t.exits[q.Owner.PID]; ok && q.Owner.PID != 0 {
			setExit(q, x)
			t.emit(l, rdma.QPEnded, e.Time)
			return
		}
		l.exitBy = e.Time.Add(t.o.ExitWait)
		t.ended = append(t.ended, l)
		return
	case t.unregistering[q.Dev]:
		q.Fate = rdma.FateDeviceRemoved
	case e.Has(rdma.EvFileClose):
		q.Fate = rdma.FateFileClose
	default:
		q.Fate = rdma.FateDestroyed
	}
	t.emit(l, rdma.QPEnded, e.Time)
}

func setExit(q *rdma.QPIdentity, x rdma.ExitStatus) {
	if sig, ok := x.Signaled(); ok {
		q.Fate, q.Signal = rdma.FateSignal, sig
		return
	}
	q.Fate, q.ExitCode, q.HasExit = rdma.FateOwnerExit, x.Status(), true
}

// device notes a device's unregistration: a QP destroyed meanwhile by
// no owner's exit was freed by the kernel's removal; one still followed
// when it is over went with it.
func (t *Tracker) device(e *rdma.Event) {
	if !e.Has(rdma.EvHasDev) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Kind == rdma.EvDevUnregister {
		t.unregistering[e.DevName] = true
		return
	}
	delete(t.unregistering, e.DevName)
	var gone []key
	for k := range t.qps {
		if k.dev == e.DevName {
			gone = append(gone, k)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].qpn < gone[j].qpn })
	for _, k := range gone {
		l := t.qps[k]
		delete(t.qps, k)
		l.id.Ended, l.id.Fate = e.Time, rdma.FateDeviceRemoved
		t.reportConnected(l, e.Time)
		t.emit(l, rdma.QPEnded, e.Time)
	}
}

// Exit takes a process's exit status: the QPs freed at its exit are
// reported with it. It is kept for ExitWait for the destroys still to
// come: the tracer's and the process events' paths interleave, and an
// owner's status can come between the destroys of its QPs.
func (t *Tracker) Exit(x rdma.ExitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.ended[:0]
	for _, l := range t.ended {
		if l.id.Owner.PID == x.PID {
			setExit(&l.id, x)
			t.emit(l, rdma.QPEnded, l.id.Ended)
			continue
		}
		kept = append(kept, l)
	}
	clear(t.ended[len(kept):])
	t.ended = kept
	t.exits[x.PID] = x
}

// NeedRemote lists the connected QPs still waiting for their remote QPN,
// by device.
func (t *Tracker) NeedRemote() map[string][]uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m map[string][]uint32
	for k, l := range t.qps {
		if l.connected && !l.reported {
			if m == nil {
				m = map[string][]uint32{}
			}
			m[k.dev] = append(m[k.dev], k.qpn)
		}
	}
	return m
}

// RemoteQPN gives a connected QP waiting for it its remote QPN (netlink's
// rqpn), read at at, and reports it. The dump that reads it lists every
// QP of the device: one not connected yet (netlink's rqpn is 0 until the
// RTR sets it) takes nothing from it, nor does one that a dump read too
// early gives 0.
func (t *Tracker) RemoteQPN(dev string, qpn, rqpn uint32, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.qps[key{dev, qpn}]
	if l == nil || l.id.HasRemoteQPN || !l.connected || l.reported || rqpn == 0 {
		return
	}
	l.id.RemoteQPN, l.id.HasRemoteQPN = rqpn, true
	t.maybeConnected(l, at)
}

// Tick reports what waited long enough: a connected QP without its remote
// QPN, a QP freed at an exit whose status did not come. It forgets exit
// statuses older than ExitWait.
func (t *Tracker) Tick(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.qps {
		if l.connected && !l.reported && now.After(l.remoteBy) {
			t.reportConnected(l, l.remoteBy)
		}
	}
	kept := t.ended[:0]
	for _, l := range t.ended {
		if now.After(l.exitBy) {
			t.stats.NoStatus++
			t.emit(l, rdma.QPEnded, l.id.Ended)
			continue
		}
		kept = append(kept, l)
	}
	clear(t.ended[len(kept):])
	t.ended = kept
	for pid, x := range t.exits {
		if now.Sub(x.Time) > t.o.ExitWait {
			delete(t.exits, pid)
		}
	}
}

// Flush reports at once what waits (at the end of a run).
func (t *Tracker) Flush() {
	t.Tick(time.Now().Add(24 * time.Hour))
}
