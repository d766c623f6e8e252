package tracerun

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
)

// FuzzParse: every line of a trace -j output is an event or an error naming
// its line and what was expected, in order, and never the end of reading
// (the tracer may be cut off mid-line); each event is put on the monotonic
// clock with the offset. Seeds: the recordings of real traces.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../../testdata/tracer/*/trace.ndjson")
	more, _ := filepath.Glob("../../../testdata/leaks/*.ndjson")
	seeds = append(seeds, append(more, "../../../testdata/formats/spans.ndjson")...)
	n := 0
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f.Add(b[:min(len(b), 4000)], int64(1_000_000_000))
		n++
	}
	if n == 0 {
		f.Fatal("no trace -j recordings in ../testdata to seed from")
	}
	f.Add([]byte(`{"time":"1970-01-01T00:00:03.5Z","event":"off-cpu","pid":5,"comm":"b","dur-us":2,"wait-us":0,"preempted":true,"next-pid":9,"next-comm":"hog"}`+"\nnot json\r\n\n"), int64(-1))
	// More bad lines than are shown: the rest are counted in one error.
	f.Add(bytes.Repeat([]byte("not json\n"), lineerr.Shown+3), int64(0))
	f.Fuzz(func(t *testing.T, in []byte, offset int64) {
		evs, bad, err := Parse(bytes.NewReader(in), "trace.ndjson", offset)
		if err != nil {
			t.Fatalf("reading %d bytes from memory: %v", len(in), err)
		}
		lines := 0
		for l := range bytes.Lines(in) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		// Past lineerr.Shown bad lines, the rest are one error at the end
		// that counts them (its More), so that error output stays bounded.
		badLines, last := 0, 0
		for i, e := range bad {
			var le *lineerr.Error
			if !errors.As(e, &le) || le.Source != "trace.ndjson" {
				t.Fatalf("bad line error %v: want a lineerr.Error naming the file", e)
			}
			badLines += le.Lines()
			if le.More > 0 {
				if i != len(bad)-1 || i != lineerr.Shown {
					t.Fatalf("error %d of %d counts %d more bad lines: want it last, after the %d shown", i, len(bad), le.More, lineerr.Shown)
				}
				continue
			}
			if le.Line <= last || le.Expected == "" {
				t.Fatalf("bad line error %v (after line %d): want it to name a later line and what was expected", e, last)
			}
			last = le.Line
		}
		if len(evs)+badLines != lines {
			t.Fatalf("%d events and %d bad lines from %d lines", len(evs), badLines, lines)
		}
		for i, ev := range evs {
			if ev.Mono != uint64(ev.Time.UnixNano()-offset) {
				t.Fatalf("event %d at %v: monotonic %d, want the wall time less %d", i, ev.Time, ev.Mono, offset)
			}
		}
	})
}
