package failures

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay/replaytest"
)

var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func qp(kind rdma.EventKind, ms int, lqpn uint32) *rdma.Event {
	e := &rdma.Event{Kind: kind, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	e.Type, e.DevName, e.LQPN = rdma.ResQP, "rxe0", lqpn
	e.Resource.Has |= rdma.HasLQPN
	if kind == rdma.EvModify {
		e.SetState(uint8(rdma.QPStateErr))
	}
	return e
}

func disconnect(ms int, lqpn uint32) *rdma.Event {
	e := &rdma.Event{Kind: rdma.EvCMDisconnect, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev}
	e.Type, e.DevName, e.LQPN = rdma.ResCMID, "rxe0", lqpn
	e.Resource.Has |= rdma.HasLQPN
	return e
}

// counted feeds events as why, the exporter and top do and gives the
// QPNs of the failures that counted, in the order they did.
func counted(q *Quiet[uint32], evs ...*rdma.Event) []uint32 {
	var out []uint32
	for _, e := range evs {
		out = append(out, q.Observe(e)...)
		if _, ok := e.Failure(); ok && q.Failure(e, e.LQPN) {
			out = append(out, e.LQPN)
		}
	}
	return out
}

// rdma_disconnect's order (the move, then the disconnect), a move after
// a disconnect, a tidy destroy and rxe's second report of a move are
// quiet; a QP in ERR at its process's exit, or one nothing follows within
// Hold, counts, once; a QP_SQE is not held.
func TestQuietDropsTheNormalEndsAndCountsTheRest(t *testing.T) {
	exit := qp(rdma.EvDestroyBegin, 80, 19)
	exit.Flags |= rdma.EvActorExiting
	sqe := qp(rdma.EvModify, 95, 22)
	sqe.SetState(uint8(rdma.QPStateSQE))
	q := NewQuiet[uint32]()
	got := counted(q,
		qp(rdma.EvModify, 50, 17), qp(rdma.EvModify, 50, 17), disconnect(51, 17), // rdma_disconnect; rxe's second report
		disconnect(52, 21), qp(rdma.EvModify, 53, 21), // the passive side: DISCONNECTED first
		qp(rdma.EvModify, 60, 18), qp(rdma.EvDestroyBegin, 61, 18), // a tidy destroy
		qp(rdma.EvModify, 70, 19), exit, // in ERR at its process's exit
		qp(rdma.EvModify, 90, 20), qp(rdma.EvModify, 91, 20), // nothing follows; reported twice
		sqe,
		qp(rdma.EvCreate, 2500, 23))
	if want := []uint32{19, 22, 20}; !slices.Equal(got, want) {
		t.Errorf("counted %v, want %v", got, want)
	}
	if q.Held() != 0 {
		t.Errorf("%d still held", q.Held())
	}
}

// Expire releases a move that waited Hold when no event comes (an idle
// live view, a scrape); End releases what is left, in time order.
func TestQuietExpireAndEnd(t *testing.T) {
	q := NewQuiet[uint32]()
	counted(q, qp(rdma.EvModify, 10, 2), qp(rdma.EvModify, 0, 1), qp(rdma.EvModify, 1500, 3))
	if got := q.Expire(t0.Add(time.Second)); got != nil {
		t.Errorf("released %v after 1 s", got)
	}
	if got, want := q.Expire(t0.Add(2010*time.Millisecond)), []uint32{1, 2}; !slices.Equal(got, want) {
		t.Errorf("after 2.01 s released %v, want %v", got, want)
	}
	if got, want := q.End(), []uint32{3}; !slices.Equal(got, want) {
		t.Errorf("at the end released %v, want %v", got, want)
	}
}

// Past maxFollowed QPs held, a move counts at once: nothing is lost and
// the table does not grow.
func TestQuietIsBounded(t *testing.T) {
	q := NewQuiet[uint32]()
	n := 0
	for i := range maxFollowed + 10 {
		e := qp(rdma.EvModify, 0, uint32(i))
		if q.Failure(e, e.LQPN) {
			n++
		}
	}
	if n != 10 || q.Held() != maxFollowed {
		t.Errorf("%d counted at once, %d held; want 10, %d", n, q.Held(), maxFollowed)
	}
}

// Recordings of an rping pair: the rping -C pairs traced on 6.1 and 6.12
// end normally (the client's move to ERR, then its disconnect; the
// server's DISCONNECTED, then its move) with no failure; a killed server
// leaves the client's first error completion counted (its move to ERR at
// its disconnect is not).
func TestQuietOverRpingRecordings(t *testing.T) {
	for name, want := range map[string]int{"tracer/6.1/trace.ndjson": 0, "tracer/6.12/trace.ndjson": 0, "why/rping-killed-peer.ndjson": 1} {
		q := NewQuiet[uint32]()
		evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", name))
		var ps []*rdma.Event
		for i := range evs {
			ps = append(ps, &evs[i])
		}
		got := append(counted(q, ps...), q.End()...)
		if len(got) != want {
			t.Errorf("%s: %d failures counted (QPs %v), want %d", name, len(got), got, want)
		}
	}
}
