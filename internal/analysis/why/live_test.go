package why

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// at sets an event's monotonic time to its wall time's offset from t0.
func at(e *rdma.Event) *rdma.Event {
	e.Mono = uint64(e.Time.Sub(t0))
	return e
}

// Two failures read out of order (from two CPUs' rings) are listed in
// time order; the steps still open at the end are listed then.
func TestLiveReordersBeforeTheAnalysis(t *testing.T) {
	var got []Line
	write := func(ls []Line) error { got = append(got, ls...); return nil }
	l := NewLive(New(Options{}), uint64(50*time.Millisecond), write)
	later := at(delivered(40, rdma.CMRejected, 8, rdma.CMConnect))
	earlier := at(delivered(20, rdma.CMRejected, 28, rdma.CMConnect))
	earlier.Obj = 0xa2
	for _, e := range []*rdma.Event{later, earlier} {
		if err := l.Push(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Tick(uint64(5*time.Second), t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Time.Sub(t0) != 20*time.Millisecond || got[1].Time.Sub(t0) != 40*time.Millisecond {
		t.Errorf("after the tick:\n%s\nwant the rejects at 20ms, then 40ms", whys(got))
	}
	got = nil
	l2 := NewLive(New(Options{}), uint64(50*time.Millisecond), write)
	_ = l2.Push(at(delivered(0, rdma.CMEvAddrResolved, 0, rdma.CMAddrResolved)))
	if err := l2.End(t0.Add(1500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	want := "1.5s no-answer rping 10.0.0.7:7471: no answer to the route resolution of 10.0.0.7:7471 after 1.5 s, when the trace ended"
	if g := whys(got); g != want {
		t.Errorf("at the end:\n%s\nwant\n%s", g, want)
	}
}

// A step unanswered past Wait is listed at the tick that finds it; the
// first write error is returned from then on.
func TestLiveListsOverdueStepsAtTicksAndKeepsTheWriteError(t *testing.T) {
	bad := errors.New("stdout closed")
	var got []Line
	write := func(ls []Line) error {
		got = append(got, ls...)
		if len(ls) > 0 {
			return bad
		}
		return nil
	}
	l := NewLive(New(Options{Wait: 2 * time.Second}), uint64(50*time.Millisecond), write)
	if err := l.Push(at(id(rdma.EvCMSendReq, 0, rdma.CMConnect))); err != nil {
		t.Fatal(err)
	}
	if err := l.Tick(uint64(time.Second), t0.Add(time.Second)); err != nil || len(got) != 0 {
		t.Fatalf("at 1s: %v, %s; want nothing yet", err, whys(got))
	}
	if err := l.Tick(uint64(3*time.Second), t0.Add(3*time.Second)); !errors.Is(err, bad) || len(got) != 1 || got[0].What != NoAnswer {
		t.Fatalf("at 3s: %v, %s; want the no-answer and the write's error", err, whys(got))
	}
	if err := l.Push(at(id(rdma.EvCMIDDestroy, 4000, rdma.CMConnect))); !errors.Is(err, bad) {
		t.Errorf("Push after a write error: %v; want it", err)
	}
	if err := l.End(t0.Add(5 * time.Second)); !errors.Is(err, bad) {
		t.Errorf("End after a write error: %v; want it", err)
	}
}
