package trace

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
)

// trace's use case without a command line: an Options value and a sink.
// A recording read back keeps what the filter keeps, up to the count.
func TestTraceReadsARecordingIntoItsSink(t *testing.T) {
	rec := filepath.Join("..", "..", "..", "testdata", "leaklog", "6.12", "trace.ndjson")
	f, err := filter.ParseEvents([]string{"qp", "event", "create"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sink := &formats.EventTee{Print: formats.NewEventWriter(&out, true)}
	if err := Read(rec, 1<<30, 2, f, sink); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d events, want the count's 2:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `"event":"create"`) || !strings.Contains(l, `"res":"qp"`) {
			t.Errorf("the filter let through %s", l)
		}
	}
}
