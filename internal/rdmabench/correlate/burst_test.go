package correlate

import (
	"slices"
	"testing"
)

// TestLifecycleCountsWhatTheTraceLacks: per phase, the QPs the trace shows
// with the right process; an event with another pid is counted apart, an
// event outside the QP's life or of another device not at all.
func TestLifecycleCountsWhatTheTraceLacks(t *testing.T) {
	p, evs := BurstFixture()
	j := NewLifecycle(&p, "rxe0")
	for i := range evs {
		j.Add(&evs[i])
	}
	r := j.Result()
	want := []PhaseCount{
		{Phase: "create", Want: 6, Got: 6},
		{Phase: "INIT", Want: 6, Got: 6},
		{Phase: "RTR", Want: 6, Got: 5, WrongPID: 1},
		{Phase: "RTS", Want: 6, Got: 5},
		{Phase: "destroy", Want: 6, Got: 5},
	}
	if !slices.Equal(r.Phases, want) {
		t.Errorf("phases %+v, want %+v", r.Phases, want)
	}
	if r.Lost() != 3 || r.QPsWithGap != 3 {
		t.Errorf("%d lost, %d QPs with a gap; want 3 and 3", r.Lost(), r.QPsWithGap)
	}
	wantMissing := []string{"pid 100 QP 11: no RTS", "pid 200 QP 21: no RTR", "pid 200 QP 22: no destroy"}
	if !slices.Equal(r.Missing, wantMissing) {
		t.Errorf("missing %q, want %q", r.Missing, wantMissing)
	}
}

// A QP that never reached its destroy (the pass failed in between) is not
// wanted destroyed.
func TestLifecycleWantsOnlyTheStepsThatRan(t *testing.T) {
	p, evs := BurstFixture()
	p.Ranks[1].QPs[2].Steps[4].Start = 0
	j := NewLifecycle(&p, "rxe0")
	for i := range evs {
		j.Add(&evs[i])
	}
	r := j.Result()
	if d := r.Phases[4]; d.Want != 5 || d.Got != 5 {
		t.Errorf("destroy %+v, want 5 of 5", d)
	}
}
