package why

import (
	"fmt"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Syndromes joins a kernel log's QP error syndromes (mlx5's "mlx5_0/1: QP
// 137 error: ...", rdma.KernQPErrSyndrome) with the QPs of a `trace -j`
// recording of the same machine: the QP of that device and number alive
// when the line was logged (created before it, not destroyed before it)
// is the one it is about, and its create names the owner.
//
// A recording keeps wall-clock times only, so a log's wall-clock stamp
// (dmesg -T, journalctl) is placed on it; dmesg's seconds since boot
// cannot be, and such a line is joined only when the recording has a
// single QP of that device and number.
//
// The logs are read first (they say which QPs of the recording to keep),
// and a log can hold any number of lines: Syndromes keeps the distinct
// ones, up to MaxSyndromes, and counts the same line again (the same
// device, QP, stamp and syndrome: a log given twice, or a flood) as a
// repeat of the first.
type Syndromes struct {
	reps    []*rdma.KernelReport // kept, in the logs' order
	same    map[sameLine]*rdma.KernelReport
	repeats map[*rdma.KernelReport]int
	lives   map[qpKey][]*qpLife
	n       int
	// Untold: QP lifetimes past MaxLives, not kept.
	Untold int
	// NotKept counts the syndromes past MaxSyndromes; FirstNotKept says
	// where the first was ("SOURCE:LINE").
	NotKept      int
	FirstNotKept string
}

// sameLine is what makes two syndrome lines the same line again: the
// same QP, syndrome and time.
type sameLine struct {
	dev, stamp, status string
	port, qpn          uint32
	vendor, hwType, hw uint32
	wall               int64 // ns since the epoch, or 0
	secs               float64
}

// qpLife is one QP of a recording, from its create (or snapshot) to its
// destroy.
type qpLife struct {
	qp         rdma.Event
	start, end time.Time
	ended      bool
}

// MaxLives bounds the QP lifetimes kept: only the QPs whose device and
// number a log's syndrome names are, but a QP number reused all day is
// still bounded.
const MaxLives = 1 << 16

// MaxSyndromes bounds the distinct syndromes kept from the logs (a few
// hundred bytes each): a real log names a QP error per QP that failed, a
// hostile one any number.
const MaxSyndromes = 1 << 16

// Slack is how far a log's wall-clock time may fall outside a QP's life
// and still be about it: dmesg -T and journalctl -o short print whole
// seconds, and dmesg -T's time drifts from the wall clock over a boot.
const Slack = 2 * time.Second

// NewSyndromes prepares the join of the logs' syndromes, given with Take.
func NewSyndromes() *Syndromes {
	return &Syndromes{same: map[sameLine]*rdma.KernelReport{}, repeats: map[*rdma.KernelReport]int{}, lives: map[qpKey][]*qpLife{}}
}

// Take offers a report of the logs, in their order. A syndrome is kept
// (and returned), or counted as a repeat of one kept (nil), or past
// MaxSyndromes counted as not kept (nil); other kinds are passed over
// (nil).
func (s *Syndromes) Take(r *rdma.KernelReport) *rdma.KernelReport {
	if r.Kind != rdma.KernQPErrSyndrome {
		return nil
	}
	k := sameLine{dev: r.Device, stamp: r.Stamp, status: r.StatusMsg, port: r.Port, qpn: r.QPN,
		vendor: r.VendorSyndrome, hwType: r.HWSyndromeType, hw: r.HWSyndrome, secs: r.Seconds}
	if r.HasWall {
		k.wall = r.Wall.UnixNano()
	}
	if first := s.same[k]; first != nil {
		s.repeats[first]++
		return nil
	}
	if len(s.reps) >= MaxSyndromes {
		if s.NotKept == 0 {
			s.FirstNotKept = fmt.Sprintf("%s:%d", r.Source, r.Line)
		}
		s.NotKept++
		return nil
	}
	s.same[k] = r
	s.reps = append(s.reps, r)
	if q := (qpKey{r.Device, r.QPN}); s.lives[q] == nil {
		s.lives[q] = []*qpLife{} // wanted: the recording's QPs of this key are kept
	}
	return r
}

// Reports are the syndromes kept, in the logs' order.
func (s *Syndromes) Reports() []*rdma.KernelReport { return s.reps }

// Repeats is how many times more the logs have r's line.
func (s *Syndromes) Repeats(r *rdma.KernelReport) int { return s.repeats[r] }

// Lines is how many syndrome lines the logs had: the kept ones, their
// repeats and those not kept.
func (s *Syndromes) Lines() int {
	n := s.NotKept + len(s.reps)
	for _, k := range s.repeats {
		n += k
	}
	return n
}

// Add takes the recording's next event, in time order.
func (s *Syndromes) Add(e *rdma.Event) {
	if e.Type != rdma.ResQP || !e.Given(rdma.HasLQPN) || e.DevName == "" {
		return
	}
	k := qpKey{e.DevName, e.LQPN}
	ls, want := s.lives[k]
	if !want {
		return
	}
	switch e.Kind {
	case rdma.EvCreate, rdma.EvExists:
		if len(ls) > 0 && !ls[len(ls)-1].ended {
			if e.Kind == rdma.EvExists {
				return // the snapshot of a QP already followed
			}
			// A create with the last one open: its destroy was lost.
			ls[len(ls)-1].ended, ls[len(ls)-1].end = true, e.Time
		}
		if s.n >= MaxLives {
			s.Untold++
			return
		}
		s.n++
		qp := *e
		qp.Stack = nil
		s.lives[k] = append(ls, &qpLife{qp: qp, start: e.Time})
	case rdma.EvDestroy:
		if len(ls) > 0 && !ls[len(ls)-1].ended {
			ls[len(ls)-1].ended, ls[len(ls)-1].end = true, e.Time
		}
	}
}

// NoQP says why a syndrome has no QP: Why in words; Missing when the
// recording has no QP of its device and number at all.
type NoQP struct {
	Why     string
	Missing bool
}

// Join sets each syndrome's QP (KernelReport.QP) from the recording, and
// returns why the others have none, by report.
func (s *Syndromes) Join() map[*rdma.KernelReport]NoQP {
	why := map[*rdma.KernelReport]NoQP{}
	for _, r := range s.reps {
		if qp, no := s.find(r); qp != nil {
			r.QP = qp
		} else {
			why[r] = no
		}
	}
	return why
}

func (s *Syndromes) find(r *rdma.KernelReport) (*rdma.Event, NoQP) {
	ls := s.lives[qpKey{r.Device, r.QPN}]
	if len(ls) == 0 {
		return nil, NoQP{Why: fmt.Sprintf("the recording has no QP %d on %s", r.QPN, r.Device), Missing: true}
	}
	if !r.HasWall {
		if len(ls) == 1 {
			return &ls[0].qp, NoQP{}
		}
		return nil, NoQP{Why: fmt.Sprintf("the recording has %d QPs numbered %d on %s, and a time since boot cannot be placed on its clock (dmesg -T or journalctl give one that can)",
			len(ls), r.QPN, r.Device)}
	}
	var best *qpLife
	var bestOff time.Duration
	for _, l := range ls {
		at := r.Wall
		if r.WallNoYear {
			at = at.AddDate(l.start.Year(), 0, 0)
		}
		off := outside(l, at)
		if off <= Slack && (best == nil || off < bestOff || (off == bestOff && l.start.After(best.start))) {
			best, bestOff = l, off
		}
	}
	if best == nil {
		return nil, NoQP{Why: fmt.Sprintf("no QP %d on %s of the recording was alive at %s", r.QPN, r.Device, r.Stamp)}
	}
	return &best.qp, NoQP{}
}

// outside is how far at falls outside l's life (0 inside it).
func outside(l *qpLife, at time.Time) time.Duration {
	switch {
	case at.Before(l.start):
		return l.start.Sub(at)
	case l.ended && at.After(l.end):
		return at.Sub(l.end)
	}
	return 0
}

// SyndromeLine is the why view's line of a joined syndrome: at the log's
// wall-clock time (else the QP's create), its QP as Res, fatal; repeats
// is how many times more the logs have the same line.
func SyndromeLine(r *rdma.KernelReport, repeats int) Line {
	l := Line{Res: *r.QP, What: SyndromeWhat, Severity: rdma.SevFatal, Why: r.SyndromeSentence()}
	l.Time = r.QP.Time
	if r.HasWall {
		l.Time = r.Wall
		if r.WallNoYear {
			l.Time = l.Time.AddDate(r.QP.Time.Year(), 0, 0)
		}
	}
	if !r.HasWall {
		l.Why += " (logged " + r.Stamp + " after boot, which a recording cannot place: shown at the QP's creation)"
	}
	if repeats > 0 {
		l.Why += fmt.Sprintf(" (the logs have this line %d times more)", repeats)
	}
	l.Res.Kind, l.Res.Time = rdma.EvQPError, l.Time
	l.Res.Resource.Has &^= rdma.HasState // the create's, not the state it failed in
	if !l.Res.Given(rdma.HasPort) && r.Port != 0 {
		l.Res.Port = r.Port
		l.Res.Resource.Has |= rdma.HasPort
	}
	return l
}

// SyndromeWhat is the What of a QP error syndrome from the kernel log.
const SyndromeWhat = "qp-error-syndrome"

// Keeps says whether the analysis keeps the owner of a joined QP (the
// owner filters and --qpn).
func (a *Analyzer) Keeps(qp *rdma.Event) bool {
	if a.o.HasQPN && qp.LQPN != a.o.QPN {
		return false
	}
	return a.o.Match == nil || a.o.Match(qp)
}
