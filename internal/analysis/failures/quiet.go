// Package failures decides which of the failures events report
// (rdma.Event.Failure) are failures: a QP's move to ERR that is its
// connection's normal end is not. why, the exporter and top count through
// it, so that the three agree.
package failures

import (
	"sort"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Hold is how long a QP's move to ERR waits for its disconnect or its
// destroy (both come within milliseconds of the move in librdmacm and in
// tidy programs).
const Hold = 2 * time.Second

// maxFollowed bounds the QPs followed: a flood of moves to ERR that are
// never settled must not grow the tables forever; past it, a move counts
// at once (as before the rule) and a disconnect is not noted.
const maxFollowed = 1 << 16

type qpKey struct {
	dev  string
	lqpn uint32
}

type held[T any] struct {
	at time.Time
	k  qpKey
	v  T
}

// Quiet holds a QP's move to ERR up to Hold and drops it when the QP's
// rdma_cm ID disconnects or the program destroys the QP itself in that
// time: librdmacm's rdma_disconnect moves a user QP to ERR before it asks
// the kernel to disconnect, and a tidy program flushes its QP through ERR
// before it destroys it. A move after the QP's ID disconnected is the
// teardown's flush and never counts. A move that stays (nothing follows
// within Hold), or whose QP the kernel destroys at its process's exit or
// file's close with no disconnect, counts: the QP entered ERR without a
// disconnect. Another move of a QP already held (rxe moves it twice) is
// the same move. T is what the caller counts a failure with, given back
// when a held move counts.
//
// Events are fed in time order: Observe for each event, then Failure for
// an event whose Failure is set. Not safe for concurrent use.
type Quiet[T any] struct {
	disconnected map[qpKey]bool
	held         map[qpKey]held[T]
}

// NewQuiet makes an empty classifier.
func NewQuiet[T any]() *Quiet[T] {
	return &Quiet[T]{disconnected: map[qpKey]bool{}, held: map[qpKey]held[T]{}}
}

// Observe takes the next event, whatever it reports, and gives the held
// moves to ERR that count now: those that waited Hold by e's time, and
// the one e's QP's destroy at exit or close ends. A disconnect of a held
// QP, or its explicit destroy, drops its move.
func (q *Quiet[T]) Observe(e *rdma.Event) []T {
	out := q.Expire(e.Time)
	if !e.Given(rdma.HasLQPN) {
		return out
	}
	k := qpKey{e.DevName, e.LQPN}
	switch {
	case Disconnects(e):
		delete(q.held, k)
		if len(q.disconnected) < maxFollowed {
			q.disconnected[k] = true
		}
	case e.Type == rdma.ResQP && (e.Kind == rdma.EvDestroyBegin || e.Kind == rdma.EvDestroy):
		if h, ok := q.held[k]; ok {
			delete(q.held, k)
			if e.Cleanup() != "" {
				out = append(out, h.v)
			}
		}
		if e.Kind == rdma.EvDestroy {
			delete(q.disconnected, k)
		}
	}
	return out
}

// Failure says whether e's failure (v) counts now. A QP's move to ERR
// does not: after its ID disconnected it never counts; else it is held,
// and Observe, Expire or End give v back when it counts.
func (q *Quiet[T]) Failure(e *rdma.Event, v T) bool {
	if e.Kind != rdma.EvModify || e.Type != rdma.ResQP || e.QPState != rdma.QPStateErr || !e.Given(rdma.HasLQPN) {
		return true
	}
	k := qpKey{e.DevName, e.LQPN}
	if q.disconnected[k] {
		return false
	}
	if _, ok := q.held[k]; ok {
		return false // the same move again
	}
	if len(q.held) >= maxFollowed {
		return true
	}
	q.held[k] = held[T]{at: e.Time, k: k, v: v}
	return false
}

// Expire gives, in time order, the held moves that waited Hold by now:
// for a reader whose events stopped (an idle live view, a scrape).
func (q *Quiet[T]) Expire(now time.Time) []T {
	return q.release(func(h held[T]) bool { return now.Sub(h.at) >= Hold })
}

// End gives every held move, in time order: the stream ended before
// anything settled them.
func (q *Quiet[T]) End() []T {
	return q.release(func(held[T]) bool { return true })
}

// Held is how many moves wait.
func (q *Quiet[T]) Held() int { return len(q.held) }

func (q *Quiet[T]) release(due func(held[T]) bool) []T {
	if len(q.held) == 0 {
		return nil
	}
	var hs []held[T]
	for k, h := range q.held {
		if due(h) {
			hs = append(hs, h)
			delete(q.held, k)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	sort.Slice(hs, func(i, j int) bool {
		a, b := hs[i], hs[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.k.dev != b.k.dev {
			return a.k.dev < b.k.dev
		}
		return a.k.lqpn < b.k.lqpn
	})
	out := make([]T, len(hs))
	for i, h := range hs {
		out[i] = h.v
	}
	return out
}

// Disconnects says whether e is its QP's rdma_cm ID disconnecting.
func Disconnects(e *rdma.Event) bool {
	return e.Kind == rdma.EvCMDisconnect || e.Kind == rdma.EvCMSentDreq || e.Kind == rdma.EvCMSentDrep ||
		e.Kind == rdma.EvCMEventHandler && e.CMEvent == rdma.CMEvDisconnected
}
