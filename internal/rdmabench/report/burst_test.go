package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// burstReport is the correlate fixture's burst, untraced, and traced with
// every verb half as long again, and what the tracer lost of it.
func burstReport() *BurstReport {
	p, evs := correlate.BurstFixture()
	traced := p
	traced.Ranks = nil
	for _, r := range p.Ranks {
		r.QPs = append([]bench.BurstQP(nil), r.QPs...)
		for i := range r.QPs {
			for s := range r.QPs[i].Steps {
				if st := &r.QPs[i].Steps[s]; st.Start != 0 {
					st.Start = p.Go + (st.Start-p.Go)*3/2
					st.Dur = st.Dur * 3 / 2
				}
			}
		}
		traced.Ranks = append(traced.Ranks, r)
	}
	j := correlate.NewLifecycle(&traced, "rxe0")
	for i := range evs {
		j.Add(&evs[i])
	}
	return &BurstReport{Dev: "rxe0", Mode: "verbs", Order: "nccl", Ranks: 2, QPs: 3, Hold: 100 * time.Millisecond,
		Emulated: "software RDMA device", Tracing: "rdmatrace trace -j beside the burst, with trace's own defaults",
		RankSteps: []string{"open-device", "alloc-pd", "create-cq", "destroy-cq", "dealloc-pd", "close-device"},
		Untraced:  p, Traced: &traced,
		Tracer: &BurstTracer{Events: 50, Seen: 60, Shown: 50, Dropped: 10, Counted: true, CPU: 250 * time.Millisecond,
			RSS: 40 << 20, PeakRSS: 60 << 20, Lag: 1500 * time.Millisecond, Wakeups: 40, Lifecycle: j.Result()}}
}

func TestBurstTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBurstTable(&b, burstReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-burst.txt", b.Bytes())
}

func TestBurstJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBurstJSON(&b, burstReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/formats/bench-burst.ndjson", b.Bytes())
	// Every line a record that reads back as its type, with no key
	// the type lacks.
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var head struct{ Record string }
		if err := json.Unmarshal([]byte(l), &head); err != nil {
			t.Fatal(err)
		}
		var v any
		switch head.Record {
		case "rank":
			v = &BurstRankRecord{}
		case "summary":
			v = &BurstSummary{}
		default:
			t.Fatalf("record %q", head.Record)
		}
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
}

// An untraced run says so and has neither a traced row nor a tracer part.
func TestBurstUntracedHasNoTracedPart(t *testing.T) {
	r := burstReport()
	r.Traced, r.Tracer, r.Tracing = nil, nil, "off"
	var b bytes.Buffer
	if err := WriteBurstTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{"traced/untraced", "the tracer", " traced "} {
		if strings.Contains(b.String(), no) {
			t.Errorf("untraced table has %q:\n%s", no, b.String())
		}
	}
	b.Reset()
	if err := WriteBurstJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{`"traced"`, `"tracer"`, `"ratio"`, `"pass":"traced"`} {
		if strings.Contains(b.String(), no) {
			t.Errorf("untraced records have %s", no)
		}
	}
}
