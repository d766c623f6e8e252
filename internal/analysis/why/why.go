// Package why lists what went wrong with an owner's RDMA objects, in time
// order: the failures the events report (rdma.Event.Failure), and the
// rdma_cm IDs whose address resolution or connect never got an answer
// before they were destroyed or within a time limit. It reads an event
// stream (a recording or a live trace) and keeps the live resource table
// (restable) to name the owner of an event that carries none.
package why

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/failures"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// FailedAtOnce is the What of an rdma_cm ID that was given a destination
// and destroyed without a device or any event delivered: its
// rdma_resolve_addr failed in the call itself (core/addr.c returns a
// route lookup's error, -ENETUNREACH, at once), and only the program saw
// the error.
const FailedAtOnce = "resolve-failed"

// NoAnswer is the What of an rdma_cm ID that began a step (address or
// route resolution, a connect) and got neither its answer nor an error.
const NoAnswer = "no-answer"

// Line is one thing that went wrong.
type Line struct {
	Time time.Time
	// Res is the event that reported it, its owner filled from the live
	// table when the event carried none.
	Res rdma.Event
	// What is the failure's fixed name (rdma.Failure.What, or NoAnswer).
	What     string
	Severity rdma.Severity
	Why      string
	// Peer is the address the object talked to, where known.
	Peer string
}

// Options say whose failures to list.
type Options struct {
	// Match keeps the objects of one owner (the pid, container and pod
	// filters); nil keeps all.
	Match func(*rdma.Event) bool
	// QPN keeps only the QP with this number and the rdma_cm ID that
	// created it (HasQPN set).
	QPN    uint32
	HasQPN bool
	// Wait is how long an rdma_cm step may go unanswered before it is
	// listed as "no answer after N s" (0: only when its ID is destroyed
	// unanswered, or the stream ends).
	Wait time.Duration
	// MaxLive bounds the live table (default 1<<16 entries).
	MaxLive int
	// NamePeer, when set, names a failed QP's peer on another host (why
	// --store): what it returns is added to the line's sentence.
	NamePeer func(*Line) string
}

// Analyzer turns events into Lines.
type Analyzer struct {
	o       Options
	live    *restable.Table
	pending map[uint64]*attempt // rdma_cm IDs in a step, by kernel address
	qpOfID  map[uint64]uint32   // the QP an rdma_cm ID created (for QPN)
	// answered are the IDs whose connect was answered: a connected ID
	// stays in the CONNECT state, which starts no step any more.
	answered map[uint64]bool
	// delivered are the IDs that got an rdma_cm event.
	delivered map[uint64]bool
	// byAddr names the IDs of a recording, which has no kernel
	// addresses: by owner and source address, unique while one lives.
	byAddr map[addrKey]uint64
	next   uint64
	// quiet holds QPs' moves to ERR until what follows says whether they
	// are a failure or the connection's normal end.
	quiet *failures.Quiet[Line]
	// failedInCall are the rdma_cm IDs whose step failed inside the call,
	// reported by the call's own event: not inferred again at their
	// destroy.
	failedInCall map[uint64]bool
}

type qpKey struct {
	dev  string
	lqpn uint32
}

type addrKey struct {
	pid uint32
	src netip.AddrPort
}

// attempt is an rdma_cm ID waiting for the answer to a step.
type attempt struct {
	since   time.Time
	step    string // "address resolution", "route resolution", "connect"
	last    rdma.Event
	flagged bool // already listed as unanswered past Wait
}

// maxPending bounds the IDs followed: a flood of IDs that never end must
// not grow it forever; past it, new steps are not followed.
const maxPending = 1 << 16

// New makes an Analyzer.
func New(o Options) *Analyzer {
	if o.MaxLive == 0 {
		o.MaxLive = 1 << 16
	}
	return &Analyzer{o: o, live: restable.New(o.MaxLive), pending: map[uint64]*attempt{}, qpOfID: map[uint64]uint32{},
		answered: map[uint64]bool{}, delivered: map[uint64]bool{}, byAddr: map[addrKey]uint64{},
		quiet: failures.NewQuiet[Line](), failedInCall: map[uint64]bool{}}
}

// Feed takes the next event (in time order) and returns what it says went
// wrong, with any step it shows to have waited past Wait.
func (a *Analyzer) Feed(e *rdma.Event) []Line {
	ev := *e
	_, en := a.live.Apply(e)
	if !ev.Has(rdma.EvHasOwner) && ev.Owner.KernName == "" && en != nil {
		// The event (a kworker's, a driver's) names no owner: the
		// object's as the table knows it.
		ev.Owner = en.Res.Owner
		ev.Flags |= en.Res.Flags & (rdma.EvHasOwner | rdma.EvUser)
		ev.OwnerCgroup = en.Res.OwnerCgroup
	}
	if ev.Obj == 0 {
		ev.Obj = a.idOf(&ev)
	}
	if ev.Kind == rdma.EvCMQPCreate && ev.Obj != 0 && ev.Given(rdma.HasLQPN) && len(a.qpOfID) < maxPending {
		a.qpOfID[ev.Obj] = ev.LQPN
	}
	out := a.overdue(ev.Time)
	if ls := a.quiet.Observe(&ev); len(ls) != 0 {
		out = append(out, ls...)
		sortLines(out)
	}
	if ev.Kind == rdma.EvCallFail && ev.CallFail.IsCMStep() && ev.Obj != 0 && len(a.failedInCall) < maxPending {
		a.failedInCall[ev.Obj] = true
	}
	if !a.keep(&ev) {
		a.forget(&ev)
		return out
	}
	if f, ok := ev.Failure(); ok {
		l := Line{Time: ev.Time, Res: ev, What: f.What, Severity: f.Severity, Why: f.Why, Peer: peerOf(&ev)}
		if a.o.NamePeer != nil && ev.Type == rdma.ResQP && ev.Given(rdma.HasLQPN) {
			if s := a.o.NamePeer(&l); s != "" {
				l.Why += "; " + s
			}
		}
		if a.quiet.Failure(&ev, l) {
			out = append(out, l)
		}
	}
	return append(out, a.follow(&ev)...)
}

// End lists the steps still unanswered when the stream ends at now.
func (a *Analyzer) End(now time.Time) []Line {
	out := a.quiet.End()
	for obj, p := range a.pending {
		if !p.flagged {
			out = append(out, a.unanswered(p, now, "when the trace ended"))
		}
		delete(a.pending, obj)
	}
	sortLines(out)
	return out
}

func (a *Analyzer) keep(e *rdma.Event) bool {
	if a.o.Match != nil && !a.o.Match(e) {
		return false
	}
	if a.o.HasQPN {
		switch {
		case e.Given(rdma.HasLQPN):
			return e.LQPN == a.o.QPN
		case e.Type == rdma.ResCMID || e.Has(rdma.EvHasCM):
			qpn, ok := a.qpOfID[e.Obj]
			return ok && qpn == a.o.QPN
		}
		return false
	}
	return true
}

// idOf names an rdma_cm ID of a recording (no kernel address): by its
// owner and bound source address, once it has a port; 0 before, or for
// anything else. The numbers are small: no kernel address is one.
func (a *Analyzer) idOf(e *rdma.Event) uint64 {
	if e.Type != rdma.ResCMID || !e.Given(rdma.HasSrcAddr) || e.Src.Port() == 0 {
		return 0
	}
	k := addrKey{e.Owner.PID, e.Src}
	n, ok := a.byAddr[k]
	if !ok {
		if len(a.byAddr) >= maxPending {
			return 0
		}
		a.next++
		n = a.next
		a.byAddr[k] = n
	}
	if destroysID(e) {
		delete(a.byAddr, k)
	}
	return n
}

// forget drops what is kept of an ID destroyed outside the selection.
func (a *Analyzer) forget(e *rdma.Event) {
	if destroysID(e) {
		delete(a.pending, e.Obj)
		delete(a.qpOfID, e.Obj)
		delete(a.answered, e.Obj)
		delete(a.delivered, e.Obj)
	}
}

func destroysID(e *rdma.Event) bool {
	return e.Kind == rdma.EvCMIDDestroy || e.Kind == rdma.EvDestroy && e.Type == rdma.ResCMID
}

// follow keeps track of an rdma_cm ID's steps: one begins with the
// state the rdma_cma tracepoints carry (ADDR_QUERY, ROUTE_QUERY), a
// resolution delivered (the program's next step) or a connect request
// sent, and ends with its answer, an error, or the
// ID's destruction, which is then listed when no answer came.
func (a *Analyzer) follow(e *rdma.Event) []Line {
	if e.Kind == rdma.EvExists {
		return nil // when its step began is not known
	}
	if e.Obj == 0 || !(e.Type == rdma.ResCMID || e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMIDCreate || e.Kind == rdma.EvCMIDDestroy) {
		return nil
	}
	p := a.pending[e.Obj]
	switch {
	case destroysID(e):
		delete(a.qpOfID, e.Obj)
		delete(a.answered, e.Obj)
		delivered := a.delivered[e.Obj]
		delete(a.delivered, e.Obj)
		failed := a.failedInCall[e.Obj]
		delete(a.failedInCall, e.Obj)
		if p == nil && !delivered && !failed && e.Kind == rdma.EvCMIDDestroy && !e.Has(rdma.EvHasDev) && peerOf(e) != "" {
			return []Line{{Time: e.Time, Res: *e, What: FailedAtOnce, Severity: rdma.SevWarn, Peer: peerOf(e),
				Why: "rdma_resolve_addr to " + peerOf(e) + " failed in the call (no route to it, or no RDMA device on the way): only the program saw the error"}}
		}
		if p == nil {
			return nil
		}
		delete(a.pending, e.Obj)
		if p.flagged {
			return nil
		}
		l := a.unanswered(p, e.Time, "before it was destroyed")
		l.Time = e.Time
		return []Line{l}
	case e.Kind == rdma.EvCMEventHandler && !a.delivered[e.Obj] && len(a.delivered) < maxPending:
		a.delivered[e.Obj] = true
	}
	switch {
	case e.Kind == rdma.EvCMEventHandler && answers(e):
		delete(a.pending, e.Obj)
		if len(a.answered) < maxPending {
			a.answered[e.Obj] = true
		}
		return nil
	}
	step := stepOf(e)
	if step == "" || a.answered[e.Obj] {
		return nil
	}
	if p == nil || p.step != step {
		if p == nil && len(a.pending) >= maxPending {
			return nil
		}
		p = &attempt{since: e.Time, step: step}
		a.pending[e.Obj] = p
	}
	last := *e
	if p.last.Given(rdma.HasSrcAddr) && !last.Given(rdma.HasSrcAddr) {
		last.Src, last.Dst, last.PS = p.last.Src, p.last.Dst, p.last.PS
		last.Resource.Has |= rdma.HasSrcAddr
	}
	if !last.Has(rdma.EvHasOwner) && p.last.Has(rdma.EvHasOwner) {
		last.Owner, last.Flags = p.last.Owner, last.Flags|rdma.EvHasOwner|p.last.Flags&rdma.EvUser
	}
	p.last = last
	return nil
}

// answers says whether a delivered rdma_cm event ends the step its ID
// was in: any event but the resolutions that start the next step.
func answers(e *rdma.Event) bool {
	switch e.CMEvent {
	case rdma.CMEvAddrResolved, rdma.CMEvRouteResolved:
		return false
	}
	return true
}

// stepOf is the step an event shows its ID in, or "".
func stepOf(e *rdma.Event) string {
	if e.Kind == rdma.EvCMSendReq {
		return "connect"
	}
	if e.Kind == rdma.EvCMEventHandler {
		switch e.CMEvent {
		case rdma.CMEvAddrResolved:
			return "route resolution" // the program resolves the route next
		case rdma.CMEvRouteResolved:
			return "connect"
		}
	}
	if e.Type != rdma.ResCMID || !e.Given(rdma.HasState) {
		return ""
	}
	// A connected ID stays in CONNECT: only a REQ sent starts a connect
	// (the passive side's is not ours to answer).
	switch e.CMState {
	case rdma.CMAddrQuery:
		return "address resolution"
	case rdma.CMRouteQuery:
		return "route resolution"
	}
	return ""
}

// overdue lists the steps that have waited past Wait at now, once each.
func (a *Analyzer) overdue(now time.Time) []Line {
	if a.o.Wait <= 0 {
		return nil
	}
	var out []Line
	for _, p := range a.pending {
		if !p.flagged && now.Sub(p.since) >= a.o.Wait {
			p.flagged = true
			l := a.unanswered(p, p.since.Add(a.o.Wait), "")
			out = append(out, l)
		}
	}
	sortLines(out)
	return out
}

// Overdue lists the steps unanswered past Wait at now, for a live view
// that is idle: the events that would show it may never come.
func (a *Analyzer) Overdue(now time.Time) []Line {
	return append(a.overdue(now), a.quiet.Expire(now)...)
}

func (a *Analyzer) unanswered(p *attempt, now time.Time, when string) Line {
	e := p.last
	peer := peerOf(&e)
	target := peer
	if target == "" {
		target = "the peer"
	}
	secs := now.Sub(p.since).Seconds()
	why := "no answer to the " + p.step + " of " + target + " after " + strconv.FormatFloat(secs, 'f', 1, 64) + " s"
	if when != "" {
		why += ", " + when
	}
	return Line{Time: now, Res: e, What: NoAnswer, Severity: rdma.SevWarn, Why: why, Peer: peer}
}

// peerOf is the address an event's rdma_cm ID talked to.
func peerOf(e *rdma.Event) string {
	if !e.Given(rdma.HasSrcAddr) || !e.Dst.IsValid() || e.Dst.Addr().IsUnspecified() {
		return ""
	}
	return e.Dst.String()
}

func sortLines(ls []Line) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Time.Before(ls[j-1].Time); j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}
