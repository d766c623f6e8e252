package why

import (
	"slices"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PostMortem is why over a recording (`trace -j`), and with kernel logs
// their QP error syndromes joined with its QPs. Without logs the lines
// come as the events are added; with logs they are held, and listed with
// the syndromes in time order once the recording is read.
type PostMortem struct {
	an   *Analyzer
	syn  *Syndromes // nil: no logs
	held []Line
}

// NewPostMortem feeds a recording to an; syn, when not nil, are the logs'
// syndromes to join with its QPs.
func NewPostMortem(an *Analyzer, syn *Syndromes) *PostMortem {
	return &PostMortem{an: an, syn: syn}
}

// Add takes the recording's next event and returns the lines to write
// now (none with logs: they are held for Join).
func (p *PostMortem) Add(e *rdma.Event) []Line {
	if p.syn != nil {
		p.syn.Add(e)
	}
	return p.hold(p.an.Feed(e))
}

// End lists the steps still unanswered when the recording ends at last
// (held too, with logs).
func (p *PostMortem) End(last time.Time) []Line { return p.hold(p.an.End(last)) }

func (p *PostMortem) hold(ls []Line) []Line {
	if p.syn == nil {
		return ls
	}
	p.held = append(p.held, ls...)
	return nil
}

// Unjoined is a syndrome whose QP the recording does not have, why, and
// how many times more the logs have its line.
type Unjoined struct {
	Report  *rdma.KernelReport
	NoQP    NoQP
	Repeats int
}

// Join names the QP of each of the logs' syndromes, and returns the held
// lines with the syndromes of the QPs the analysis keeps, in time order,
// and the syndromes with no QP in the logs' order. Without logs, nothing.
func (p *PostMortem) Join() ([]Line, []Unjoined) {
	if p.syn == nil {
		return nil, nil
	}
	noQP := p.syn.Join()
	var none []Unjoined
	held := p.held
	for _, r := range p.syn.Reports() {
		switch {
		case r.QP == nil:
			none = append(none, Unjoined{Report: r, NoQP: noQP[r], Repeats: p.syn.Repeats(r)})
		case p.an.Keeps(r.QP):
			held = append(held, SyndromeLine(r, p.syn.Repeats(r)))
		}
	}
	slices.SortStableFunc(held, func(a, b Line) int { return a.Time.Compare(b.Time) })
	p.held = nil
	return held, none
}

// JoinKept is Join for leaks' post-mortem: each syndrome's QP named from
// the recording, unless keep leaves its owner out; it returns why the
// others have none.
func (s *Syndromes) JoinKept(keep func(*rdma.Event) bool) map[*rdma.KernelReport]string {
	noQP := map[*rdma.KernelReport]string{}
	for rep, no := range s.Join() {
		noQP[rep] = no.Why
	}
	for _, rep := range s.reps {
		if rep.QP != nil && keep != nil && !keep(rep.QP) {
			rep.QP = nil
			noQP[rep] = "its QP's owner is not among those selected"
		}
	}
	return noQP
}
