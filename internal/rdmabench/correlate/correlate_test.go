package correlate

import (
	"math"
	"slices"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

func TestOutliersNameWhatOverlappedThem(t *testing.T) {
	s, ev := Fixture()
	r := Outliers(s, ev, Options{PID: 100, Threads: []int{101}, Dev: "rxe0"})
	if r.Median != 20_000 || r.Threshold != 60_000 {
		t.Errorf("median %d, threshold %d; want 20000 and 60000 (3 × median above p99)", r.Median, r.Threshold)
	}
	if len(r.Outliers) != 3 {
		t.Fatalf("%d outliers, want 3", len(r.Outliers))
	}
	want := [][]string{{"off-cpu:hog", "off-cpu:kworker/1:1H"}, {"mr-reg:noise"}, nil}
	for i, o := range r.Outliers {
		if !slices.Equal(o.Causes, want[i]) {
			t.Errorf("outlier %d (sample %d): causes %q, want %q", i, o.Index, o.Causes, want[i])
		}
	}
	if len(r.Outliers[1].Events) != 2 {
		t.Errorf("sample 500 overlapped %d events, want the span and the MR", len(r.Outliers[1].Events))
	}
	wantCounts := map[string]int{"off-cpu:hog": 1, "off-cpu:kworker/1:1H": 1, "mr-reg:noise": 1, Nothing: 1}
	if len(r.Causes) != len(wantCounts) {
		t.Errorf("causes %v, want %v", r.Causes, wantCounts)
	}
	for k, v := range wantCounts {
		if r.Causes[k] != v {
			t.Errorf("causes %v, want %v", r.Causes, wantCounts)
		}
	}
}

func TestAFactorBelowTheP99KeepsTheP99(t *testing.T) {
	s, _ := Fixture()
	r := Outliers(s, nil, Options{Factor: 0.5})
	if r.Threshold != r.P99 {
		t.Errorf("threshold %d, want the p99 %d", r.Threshold, r.P99)
	}
}

func TestConnectionPhasesAddUpToTheTotal(t *testing.T) {
	conns, ev := ConnFixture()
	r := Connections(conns, ev)
	if !r.SumOK {
		t.Error("phases do not add up")
	}
	want := []int64{3, 3, 2, 4, 3, 5, 1, 9, 1, 4, 5, 10, 10}
	for i, p := range r.Conns[0].Phases {
		if p != want[i]*ms {
			t.Errorf("connection 1 phase %s: %d ns, want %d ms", Phases[i], p, want[i])
		}
	}
	c2 := r.Conns[1]
	if !slices.Equal(c2.Missing, []string{"resolve-route"}) || c2.Phases[1] != 0 || c2.Phases[2] != 5*ms {
		t.Errorf("connection 2: missing %q, phases %v; want resolve-route folded into create-qp-init", c2.Missing, c2.Phases)
	}
	if s := r.Stats[len(Phases)-1]; s.Share < 0.16 || s.Share > 0.17 {
		t.Errorf("destroy's share %.3f, want 10/60", s.Share)
	}
}

func TestOpsGetTheirKernelTime(t *testing.T) {
	ops := []bench.Op{{Name: "reg-mr", Size: 1 << 20, TID: 7, Start: 1000, Dur: 5000}, {Name: "alloc-pd", TID: 7, Start: 7000, Dur: 100}}
	ev := []rdma.Event{
		{Mono: 1100, Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_uverbs_reg_mr", Dur: 4000}, Resource: rdma.Resource{Owner: rdma.Owner{TID: 7}}},
		{Mono: 1200, Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_umem_get", Dur: 3000}, Resource: rdma.Resource{Owner: rdma.Owner{TID: 7}}},
		{Mono: 1100, Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_uverbs_reg_mr", Dur: 4000}, Resource: rdma.Resource{Owner: rdma.Owner{TID: 8}}}, // another thread
	}
	got := Ops(ops, ev)
	if got[0].Kernel != 4000 || got[0].Pin != 3000 || got[0].Func != "ib_uverbs_reg_mr" {
		t.Errorf("reg-mr: %+v", got[0])
	}
	if got[1].Func != "" || got[1].Kernel != 0 {
		t.Errorf("alloc-pd with no span: %+v", got[1])
	}
}

func TestASpellNamesTheFirstAndTheLastTaskThatRanInstead(t *testing.T) {
	s, _ := Fixture()
	ev := []rdma.Event{{Mono: uint64(s[100].Start), Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner,
		Resource: rdma.Resource{Owner: benchOwner}, OffCPU: rdma.OffCPU{Dur: uint64(ms), Next: rdma.Owner{PID: 12, TID: 12, Comm: "kworker/u8:0"}}, Actor: rdma.Owner{PID: 300, TID: 300, Comm: "hog"}}}
	r := Outliers(s, ev, Options{PID: 100, Threads: []int{101}})
	if got := r.Outliers[0].Causes; !slices.Equal(got, []string{"off-cpu:hog", "off-cpu:kworker/u8:0"}) {
		t.Errorf("causes %q, want the kworker (first) and the hog (last)", got)
	}
}

func TestAnOutlierUnderAFloodKeepsTheEarliestEventsAndCountsTheRest(t *testing.T) {
	s, _ := Fixture()
	at := uint64(s[100].Start)
	var ev []rdma.Event
	// Spells of the timed thread, latest first, then one by another task
	// at the end: it still names its cause.
	for i := 3 * MaxOutlierEvents; i > 0; i-- {
		ev = append(ev, rdma.Event{Mono: at + uint64(i)*1000, Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner,
			Resource: rdma.Resource{Owner: benchOwner}, OffCPU: rdma.OffCPU{Dur: 500, Next: rdma.Owner{PID: 300, TID: 300, Comm: "hog"}}})
	}
	ev = append(ev, rdma.Event{Mono: at + uint64(ms), Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner,
		Resource: rdma.Resource{Owner: benchOwner}, OffCPU: rdma.OffCPU{Dur: 500, Next: rdma.Owner{PID: 301, TID: 301, Comm: "late"}}})
	r := Outliers(s, ev, Options{PID: 100, Threads: []int{101}})
	o := r.Outliers[0]
	if o.Index != 100 || len(o.Events) != MaxOutlierEvents || o.More != 2*MaxOutlierEvents+1 {
		t.Fatalf("outlier %d kept %d events, %d more: want %d kept, %d more", o.Index, len(o.Events), o.More, MaxOutlierEvents, 2*MaxOutlierEvents+1)
	}
	for i := range o.Events {
		if want := at + uint64(i+1)*1000; o.Events[i].Mono != want {
			t.Fatalf("event %d at %d, want %d: the earliest, in time order", i, o.Events[i].Mono, want)
		}
	}
	if !slices.Equal(o.Causes, []string{"off-cpu:hog", "off-cpu:late"}) {
		t.Errorf("causes %q: want both, from every event that overlapped", o.Causes)
	}
}

func TestJoinGivesWhatOutliersGivesWhateverTheEventOrder(t *testing.T) {
	s, ev := Fixture()
	o := Options{PID: 100, Threads: []int{101}, Dev: "rxe0"}
	want := Outliers(s, ev, o)
	j := NewJoin(s, o)
	for i := len(ev) - 1; i >= 0; i-- {
		j.Add(&ev[i])
	}
	got := j.Result()
	if len(got.Outliers) != len(want.Outliers) {
		t.Fatalf("%d outliers, want %d", len(got.Outliers), len(want.Outliers))
	}
	for i := range got.Outliers {
		g, w := got.Outliers[i], want.Outliers[i]
		if g.Index != w.Index || !slices.Equal(g.Causes, w.Causes) || len(g.Events) != len(w.Events) {
			t.Errorf("outlier %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestAJoinOfARecordedSeriesIsTheJoinOfItsSamples(t *testing.T) {
	s, ev := Fixture()
	rec := bench.NewRecorder(bench.RecorderConfig{})
	rec.Add(s[:len(s)/2])
	rec.Add(s[len(s)/2:])
	o := Options{PID: 100, Threads: []int{101}, Dev: "rxe0"}
	want := Outliers(s, ev, o)
	j := NewJoinRecorder(rec, o)
	for i := range ev {
		j.Add(&ev[i])
	}
	got := j.Result()
	if got.Threshold != want.Threshold || got.Total != len(want.Outliers) || !got.Complete || len(got.Outliers) != len(want.Outliers) {
		t.Fatalf("threshold %d, %d of %d outliers (complete %v); want %d, %d", got.Threshold, len(got.Outliers), got.Total, got.Complete,
			want.Threshold, len(want.Outliers))
	}
	for i := range got.Outliers {
		if got.Outliers[i].Index != want.Outliers[i].Index || !slices.Equal(got.Outliers[i].Causes, want.Outliers[i].Causes) {
			t.Errorf("outlier %d: %+v, want %+v", i, got.Outliers[i], want.Outliers[i])
		}
	}
}

func TestAJoinPastTheExactBudgetListsABoundedShare(t *testing.T) {
	// 200 000 samples of 20 µs, every 50th slow: the threshold is the p99,
	// about 2 000 outliers, of which a recorder with 100 worst and 100 at
	// random lists at most 200 (the total is estimated from the
	// histogram: here the threshold shares its bucket with a tenth of them).
	s := make([]bench.Sample, 200_000)
	for i := range s {
		lat := int64(20_000 + i%7)
		if i%50 == 0 {
			lat = 100_000 + int64(i%1000)
		}
		s[i] = bench.Sample{Start: int64(i) * 50_000, Lat: lat}
	}
	rec := bench.NewRecorder(bench.RecorderConfig{Exact: 1000, Worst: 100, Reservoir: 100})
	for i := 0; i < len(s); i += bench.ChunkSamples {
		rec.Add(s[i:min(i+bench.ChunkSamples, len(s))])
	}
	r := NewJoinRecorder(rec, Options{}).Result()
	exact := len(Outliers(s, nil, Options{}).Outliers)
	if r.Complete || len(r.Outliers) > 200 || len(r.Outliers) < 100 || math.Abs(float64(r.Total-exact)) > 0.1*float64(exact) {
		t.Errorf("%d listed, total %d (complete %v); want at most 200 of about %d", len(r.Outliers), r.Total, r.Complete, exact)
	}
	for _, o := range r.Outliers {
		if o.Sample.Lat <= r.Threshold || s[o.Index] != o.Sample {
			t.Fatalf("listed %+v: not an outlier of the series", o)
		}
	}
	if r.Causes[Nothing] != len(r.Outliers) {
		t.Errorf("causes %v: want the listed ones, nothing", r.Causes)
	}
}
