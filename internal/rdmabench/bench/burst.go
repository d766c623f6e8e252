package bench

import "slices"

// BurstRank is one rank of a connection burst (rdmabench burst): the
// process and thread that made its QPs, its own steps (device, PD, CQ:
// verbs.BurstRankSteps) and its QPs.
type BurstRank struct {
	PID, TID int
	Setup    []StepTime
	QPs      []BurstQP
}

// BurstPass is one run of a burst: every rank's QPs, and the moment all
// were told to go (CLOCK_MONOTONIC ns).
type BurstPass struct {
	Steps []string // the QPs' step names, in BurstQP.Steps order
	Go    int64
	Ranks []BurstRank
}

// QPs counts the QPs of the pass.
func (p *BurstPass) QPs() int {
	n := 0
	for _, r := range p.Ranks {
		n += len(r.QPs)
	}
	return n
}

// Span is when the steps from first to last (indexes into Steps) ran over
// the whole pass: the earliest start of first and the latest end of last,
// over every QP that ran them. ok is false when none did.
func (p *BurstPass) Span(first, last int) (start, end int64, ok bool) {
	started, ended := false, false
	for _, r := range p.Ranks {
		for i := range r.QPs {
			q := &r.QPs[i]
			if s := q.Steps[first]; s.Start != 0 && (!started || s.Start < start) {
				start, started = s.Start, true
			}
			if s := q.Steps[last]; s.Start != 0 && (!ended || s.Start+s.Dur > end) {
				end, ended = s.Start+s.Dur, true
			}
		}
	}
	return start, end, started && ended
}

// Durations are the ns each QP of the pass took in step i (those that ran
// it).
func (p *BurstPass) Durations(i int) []int64 {
	var d []int64
	for _, r := range p.Ranks {
		for k := range r.QPs {
			if s := r.QPs[k].Steps[i]; s.Start != 0 {
				d = append(d, s.Dur)
			}
		}
	}
	return d
}

// Ends are the moments (ns since Go) at which the QPs of the pass ended
// step i, sorted: the curve of QPs connected (or destroyed) over time.
func (p *BurstPass) Ends(i int) []int64 {
	var t []int64
	for _, r := range p.Ranks {
		for k := range r.QPs {
			if s := r.QPs[k].Steps[i]; s.Start != 0 {
				t = append(t, s.Start+s.Dur-p.Go)
			}
		}
	}
	slices.Sort(t)
	return t
}
