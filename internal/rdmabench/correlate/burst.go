package correlate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// LifecyclePhases are the events a tracer must show for each QP of a
// burst: its creation, its moves to INIT, RTR and RTS, its destruction.
var LifecyclePhases = []string{"create", "INIT", "RTR", "RTS", "destroy"}

const (
	phaseCreate = iota
	phaseInit
	phaseRTR
	phaseRTS
	phaseDestroy
	nPhases
)

// PhaseCount is one lifecycle phase over a burst's QPs: how many QPs went
// through it (Want), how many of those the trace shows doing so with the
// right process (Got), and how many events of it named another process
// (WrongPID, not in Got).
type PhaseCount struct {
	Phase    string
	Want     int
	Got      int
	WrongPID int
}

// Lost is how many of the phase's events the trace lacks.
func (p PhaseCount) Lost() int { return p.Want - p.Got }

// LifecycleResult is a burst's QPs against a trace of it.
type LifecycleResult struct {
	Phases []PhaseCount
	// QPsWithGap counts the QPs with at least one phase missing.
	QPsWithGap int
	// Missing names the first QPs with a gap ("pid 812 QP 4711: no RTR,
	// RTS"), at most maxMissing of them.
	Missing []string
}

// Lost sums the phases' lost events.
func (r *LifecycleResult) Lost() int {
	n := 0
	for _, p := range r.Phases {
		n += p.Lost()
	}
	return n
}

const maxMissing = 5

// lifecycleSlack widens a QP's life for the trace's times, which are wall
// times put back on CLOCK_MONOTONIC with the tracer's offset at its start.
const lifecycleSlack = 50_000_000 // ns

type qpLife struct {
	pid      int
	from, to int64 // its create's start and its destroy's end (or +inf: not destroyed)
	want     [nPhases]bool
	got      [nPhases]bool
}

// LifecycleJoin matches a trace's events with a burst's QPs, one event at
// a time: the trace of a large burst need not be held in memory.
type LifecycleJoin struct {
	dev   string
	qps   map[uint32]*qpLife
	order []uint32 // QPNs in the pass's order, for Missing
	wrong [nPhases]int
}

// NewLifecycle prepares the join of pass's QPs on device dev. The steps
// that create and destroy a QP are found by name (create-qp, and
// destroy-qp or destroy); a QP's moves are wanted when it reached RTS, as
// every QP of a finished pass has.
func NewLifecycle(p *bench.BurstPass, dev string) *LifecycleJoin {
	create, destroy := slices.Index(p.Steps, "create-qp"), slices.Index(p.Steps, "destroy-qp")
	if destroy < 0 {
		destroy = slices.Index(p.Steps, "destroy")
	}
	j := &LifecycleJoin{dev: dev, qps: make(map[uint32]*qpLife, p.QPs())}
	for _, r := range p.Ranks {
		for i := range r.QPs {
			q := &r.QPs[i]
			if create < 0 || q.Steps[create].Start == 0 {
				continue // never made
			}
			l := &qpLife{pid: r.PID, from: q.Steps[create].Start - lifecycleSlack, to: 1<<63 - 1}
			l.want[phaseCreate], l.want[phaseInit], l.want[phaseRTR], l.want[phaseRTS] = true, true, true, true
			if destroy >= 0 && q.Steps[destroy].Start != 0 {
				l.want[phaseDestroy] = true
				l.to = q.Steps[destroy].Start + q.Steps[destroy].Dur + lifecycleSlack
			}
			j.qps[q.QPN] = l
			j.order = append(j.order, q.QPN)
		}
	}
	return j
}

// phaseOf says which lifecycle phase a QP event is, if any.
func phaseOf(e *rdma.Event) (int, bool) {
	switch e.Kind {
	case rdma.EvCreate:
		return phaseCreate, true
	case rdma.EvDestroy:
		return phaseDestroy, true
	case rdma.EvModify:
		if !e.Given(rdma.HasState) {
			return 0, false
		}
		switch e.QPState {
		case rdma.QPStateInit:
			return phaseInit, true
		case rdma.QPStateRTR:
			return phaseRTR, true
		case rdma.QPStateRTS:
			return phaseRTS, true
		}
	}
	return 0, false
}

// Add takes one traced event.
func (j *LifecycleJoin) Add(e *rdma.Event) {
	if e.Type != rdma.ResQP || !e.Given(rdma.HasLQPN) || e.DevName != j.dev {
		return
	}
	ph, ok := phaseOf(e)
	if !ok {
		return
	}
	l := j.qps[e.LQPN]
	if l == nil || int64(e.Mono) < l.from || int64(e.Mono) > l.to {
		return
	}
	if !e.Has(rdma.EvHasOwner) || int(e.Owner.PID) != l.pid {
		j.wrong[ph]++
		return
	}
	l.got[ph] = true
}

// Result counts, per phase, what the trace showed.
func (j *LifecycleJoin) Result() LifecycleResult {
	r := LifecycleResult{Phases: make([]PhaseCount, nPhases)}
	for ph := range r.Phases {
		r.Phases[ph] = PhaseCount{Phase: LifecyclePhases[ph], WrongPID: j.wrong[ph]}
	}
	for _, qpn := range j.order {
		l := j.qps[qpn]
		var gaps []string
		for ph := 0; ph < nPhases; ph++ {
			if !l.want[ph] {
				continue
			}
			r.Phases[ph].Want++
			if l.got[ph] {
				r.Phases[ph].Got++
			} else {
				gaps = append(gaps, LifecyclePhases[ph])
			}
		}
		if len(gaps) > 0 {
			r.QPsWithGap++
			if len(r.Missing) < maxMissing {
				r.Missing = append(r.Missing, fmt.Sprintf("pid %d QP %d: no %s", l.pid, qpn, strings.Join(gaps, ", ")))
			}
		}
	}
	return r
}
