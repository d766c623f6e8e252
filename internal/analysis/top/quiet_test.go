package top

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay/replaytest"
)

// An rping -C pair that ends normally (traced on 6.1 and 6.12) shows no
// failure in top; a killed server still shows the client's first error
// completion. The frame is taken well after the last event, so that a
// move held for its disconnect would have counted by then.
func TestTopCountsNoFailureAtANormalEnd(t *testing.T) {
	for name, want := range map[string]uint64{"tracer/6.1/trace.ndjson": 0, "tracer/6.12/trace.ndjson": 0, "why/rping-killed-peer.ndjson": 1} {
		evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", name))
		a := New(ByProcess, 0, 0)
		a.Start(evs[0].Time)
		feed(a, evs...)
		f := a.Frame(evs[len(evs)-1].Time.Add(time.Minute))
		if f.Node.Failures != want {
			t.Errorf("%s: %d failures (last: %q), want %d", name, f.Node.Failures, f.Node.LastFailure, want)
		}
	}
}

// A move to ERR nothing settles counts at the frame after the hold, with
// no event since.
func TestTopCountsAMoveToERRNothingSettles(t *testing.T) {
	a := New(ByProcess, 0, 0)
	a.Start(t0)
	m := ev(rdma.EvModify, rdma.ResQP, 17, 7, "app", 0)
	m.SetState(uint8(rdma.QPStateErr))
	feed(a, ev(rdma.EvCreate, rdma.ResQP, 17, 7, "app", 0), m)
	if f := a.Frame(t0.Add(time.Second)); f.Node.Failures != 0 {
		t.Errorf("%d failures 1 s after the move, want none yet", f.Node.Failures)
	}
	f := a.Frame(t0.Add(3 * time.Second))
	if r := ownerRow(t, f, "app[7]"); f.Node.Failures != 1 || r.Failures != 1 {
		t.Errorf("3 s after the move: node %d, app %d failures; want 1", f.Node.Failures, r.Failures)
	}
}
