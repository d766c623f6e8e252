package why

import (
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// qpToERR is a QP's modify to ERR at at: a failure the analysis lists.
func qpToERR(dev string, qpn uint32, at time.Duration, pid uint32) *rdma.Event {
	e := qpEvent(rdma.EvModify, dev, qpn, at, pid)
	e.SetState(uint8(rdma.QPStateErr))
	return e
}

func recordingOf() []*rdma.Event {
	return []*rdma.Event{
		qpEvent(rdma.EvCreate, "mlx5_0", 137, 0, 100),
		qpEvent(rdma.EvCreate, "mlx5_0", 138, 0, 200),
		qpToERR("mlx5_0", 137, 5*time.Second, 100),
		qpToERR("mlx5_0", 138, 9*time.Second, 200),
	}
}

func TestPostMortemWithoutLogsListsAsItReads(t *testing.T) {
	pm := NewPostMortem(New(Options{}), nil)
	n := 0
	for _, e := range recordingOf() {
		n += len(pm.Add(e))
	}
	n += len(pm.End(synT0.Add(10 * time.Second)))
	if n != 2 {
		t.Errorf("%d lines as the recording was read; want the 2 moves to ERR", n)
	}
	if ls, none := pm.Join(); ls != nil || none != nil {
		t.Errorf("Join without logs: %v, %v; want nothing", ls, none)
	}
}

// With logs, the recording's lines are held and come back with the
// syndromes joined, in time order; a syndrome whose QP is not the selected
// owner's is left out, one with no QP in the recording is returned with
// why.
func TestPostMortemWithLogsListsSyndromesAmongFailuresInTimeOrder(t *testing.T) {
	in := syndrome("mlx5_0", 137, 3*time.Second, true)   // pid 100's, before its ERR
	out := syndrome("mlx5_0", 138, 8*time.Second, true)  // pid 200's: not selected
	none := syndrome("mlx5_0", 999, 1*time.Second, true) // no such QP
	syn := syndromesOf(in, out, none)
	pm := NewPostMortem(New(Options{Match: func(e *rdma.Event) bool { return e.Owner.PID == 100 }}), syn)
	for _, e := range recordingOf() {
		if ls := pm.Add(e); len(ls) > 0 {
			t.Errorf("Add with logs gave %d lines; want them held", len(ls))
		}
	}
	if ls := pm.End(synT0.Add(10 * time.Second)); len(ls) > 0 {
		t.Errorf("End with logs gave %d lines; want them held", len(ls))
	}
	ls, unjoined := pm.Join()
	var got []string
	for _, l := range ls {
		got = append(got, l.Time.Sub(synT0).String()+" "+l.What)
	}
	if len(got) != 2 || got[0] != "3s "+SyndromeWhat || ls[1].What == SyndromeWhat || ls[1].Time != synT0.Add(5*time.Second) {
		t.Errorf("lines %q; want pid 100's syndrome at 3s, then its move to ERR at 5s", got)
	}
	if len(unjoined) != 1 || unjoined[0].Report != none || unjoined[0].NoQP != (NoQP{Why: "the recording has no QP 999 on mlx5_0", Missing: true}) {
		t.Errorf("unjoined %+v; want QP 999 with why", unjoined)
	}
}

// leaks' join: a syndrome's QP whose owner keep leaves out is not named,
// and says so.
func TestJoinKeptNamesOnlyTheKeptOwnersQPs(t *testing.T) {
	a, b := syndrome("mlx5_0", 137, time.Second, true), syndrome("mlx5_0", 138, time.Second, true)
	syn := syndromesOf(a, b)
	for _, e := range recordingOf() {
		syn.Add(e)
	}
	noQP := syn.JoinKept(func(e *rdma.Event) bool { return e.Owner.PID == 100 })
	if a.QP == nil || a.QP.Owner.PID != 100 || noQP[a] != "" {
		t.Errorf("QP 137: %v (%q); want pid 100's", a.QP, noQP[a])
	}
	if b.QP != nil || noQP[b] != "its QP's owner is not among those selected" {
		t.Errorf("QP 138: %v (%q); want none, its owner not selected", b.QP, noQP[b])
	}
}
