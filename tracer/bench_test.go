package tracer

import (
	"io"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// BenchmarkDecodeFilterEncode is `rdmatrace trace`'s hot path as the binary
// runs it: decode a record, filter it, and write it with the writer trace
// uses (formats.EventWriter), for -j (ndjson) and for the human view
// (text), over the records recorded on 6.1.
func BenchmarkDecodeFilterEncode(b *testing.B) {
	for _, out := range []struct {
		name string
		json bool
	}{{"ndjson", true}, {"text", false}} {
		b.Run(out.name, func(b *testing.B) {
			clock, recs := readRecording(b, "../testdata/tracer/6.1")
			d := NewDecoder(clock)
			w := formats.NewEventWriter(io.Discard, out.json)
			var ev rdma.Event
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				rec := recs[n%len(recs)]
				n++
				if err := d.Decode(rec, &ev); err != nil {
					b.Fatal(err)
				}
				if ev.Res == rdma.ResSRQ { // a filter that keeps almost everything
					continue
				}
				if err := w.Write(&ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
