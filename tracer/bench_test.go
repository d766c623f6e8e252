package tracer

import (
	"io"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// traceWords are the filter words of the benchmarked `rdmatrace trace -j
// comm rping`: of the recording's events, rping's pass and the kernel's
// own (the GSI QP's, the device's) do not.
var traceWords = []string{"comm", "rping"}

// BenchmarkDecodeFilterEncode is `rdmatrace trace`'s hot path as the binary
// runs it: decode a record, filter it with the event filter trace builds
// from its words (filter.ParseEvents, as cmd/rdmatrace's parseEvents
// does), and write it with the writer trace uses (formats.EventWriter),
// for -j (ndjson) and for the human view (text), over the records recorded
// on 6.1.
func BenchmarkDecodeFilterEncode(b *testing.B) {
	for _, out := range []struct {
		name string
		json bool
	}{{"ndjson", true}, {"text", false}} {
		b.Run(out.name, func(b *testing.B) {
			clock, recs := readRecording(b, "../testdata/tracer/6.1")
			f, err := filter.ParseEvents(traceWords)
			if err != nil {
				b.Fatal(err)
			}
			d := NewDecoder(clock)
			w := formats.NewEventWriter(io.Discard, out.json)
			var ev rdma.Event
			b.ReportAllocs()
			n, kept := 0, 0
			for b.Loop() {
				rec := recs[n%len(recs)]
				n++
				if err := d.Decode(rec, &ev); err != nil {
					b.Fatal(err)
				}
				if !f.Match(&ev) {
					continue
				}
				kept++
				if err := w.Write(&ev); err != nil {
					b.Fatal(err)
				}
			}
			// Both of the filter's ways are taken, or this is not the
			// path the binary runs on such a trace.
			if n >= len(recs) && (kept == 0 || kept == n) {
				b.Fatalf("%v kept %d of %d events: want some, not all", traceWords, kept, n)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(kept)/float64(n), "kept/event")
		})
	}
}
