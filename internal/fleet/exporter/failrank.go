package exporter

import (
	"math"
	"time"
)

// failRank chooses the owners rdma_failures_total names. An owner's score
// is its failures, each one's weight halving every halfLife: the topN
// scores are named, and an owner that stops failing gives its slot to one
// that fails now. A user (uid) keeps at most half the slots (at least one)
// once another user's owner wants one: past that share, its slots go to
// other users' owners first, and its own owners take slots from its own
// owners only. One user's processes, however many and whatever they call
// themselves, cannot keep another user's owners out.
type failRank struct {
	topN     int
	halfLife time.Duration
	named    map[failOwner]*failScore
	// waiting are owners not named, remembered for their scores (at most
	// maxWaiting: past it, the lowest score is forgotten).
	waiting map[failOwner]*failScore
}

// failOwner is an owner as rdma_failures_total labels it: comm, container
// and uid ("" when unknown).
type failOwner struct {
	holder
	uid string
}

// user is who a slot is counted against: the uid, else the container.
func (o failOwner) user() string {
	if o.uid != "" {
		return "uid " + o.uid
	}
	return "container " + o.container
}

type failScore struct {
	v  float64
	at time.Time
}

const (
	failHalfLife = 10 * time.Minute
	maxWaiting   = 1024
)

func newFailRank(topN int) *failRank {
	return &failRank{topN: topN, halfLife: failHalfLife, named: map[failOwner]*failScore{}, waiting: map[failOwner]*failScore{}}
}

func (r *failRank) value(s *failScore, now time.Time) float64 {
	return s.v * math.Exp2(-now.Sub(s.at).Seconds()/r.halfLife.Seconds())
}

func (r *failRank) bump(s *failScore, now time.Time) {
	s.v, s.at = r.value(s, now)+1, now
}

// fail counts a failure of o at now. named says whether o has a series of
// its own now; evicted, when set, is the owner whose slot o took (its
// series go).
func (r *failRank) fail(o failOwner, now time.Time) (named bool, evicted *failOwner) {
	if s, ok := r.named[o]; ok {
		r.bump(s, now)
		return true, nil
	}
	s := r.waiting[o]
	if s == nil {
		if len(r.waiting) >= maxWaiting {
			r.forgetLowest(now)
		}
		s = &failScore{}
		r.waiting[o] = s
	}
	r.bump(s, now)
	if len(r.named) < r.topN {
		r.name(o, s)
		return true, nil
	}
	// The slot to take. From a user past its share, while o's user is
	// not: whatever the scores (free slots went to whoever failed first).
	// Else the lowest score's, among o's user's own owners once that user
	// holds its share, and only when o's score is higher.
	share := max(1, r.topN/2)
	held := map[string]int{}
	for n := range r.named {
		held[n.user()]++
	}
	over, most := "", share
	for u, n := range held {
		if u != o.user() && (n > most || n == most && over != "" && u < over) {
			over, most = u, n
		}
	}
	var victim *failOwner
	low := math.Inf(1)
	for n, ns := range r.named {
		switch {
		case over != "" && n.user() != over:
			continue
		case over == "" && held[o.user()] >= share && n.user() != o.user():
			continue
		}
		if v := r.value(ns, now); v < low || v == low && less(n, *victim) {
			n := n
			victim, low = &n, v
		}
	}
	if victim == nil || over == "" && low >= r.value(s, now) {
		return false, nil
	}
	r.waiting[*victim] = r.named[*victim]
	delete(r.named, *victim)
	r.name(o, s)
	return true, victim
}

func (r *failRank) name(o failOwner, s *failScore) {
	delete(r.waiting, o)
	r.named[o] = s
}

func (r *failRank) forgetLowest(now time.Time) {
	var lowest *failOwner
	low := math.Inf(1)
	for o, s := range r.waiting {
		if v := r.value(s, now); v < low || v == low && less(o, *lowest) {
			o := o
			lowest, low = &o, v
		}
	}
	if lowest != nil {
		delete(r.waiting, *lowest)
	}
}

// less orders owners for a stable choice between equal scores.
func less(a, b failOwner) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	if a.container != b.container {
		return a.container < b.container
	}
	return a.uid < b.uid
}
