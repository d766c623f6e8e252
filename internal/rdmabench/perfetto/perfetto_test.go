package perfetto_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/perfetto"
)

// A lat run with its outliers and a conn run with its phases, as Chrome
// trace JSON.
func TestPerfettoGolden(t *testing.T) {
	s, ev := correlate.Fixture()
	r := correlate.Outliers(s, ev, correlate.Options{PID: 100, Threads: []int{101}, Dev: "rxe0"})
	conns, cev := correlate.ConnFixture()
	cr := correlate.Connections(conns, cev)
	tl := perfetto.Timeline{PID: 100, Samples: s[95:105], Outliers: r.Outliers, Conns: conns, Phases: &cr, Events: append(ev, cev[:3]...)}
	var b bytes.Buffer
	if err := perfetto.Write(&b, &tl); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../../../testdata/perfetto/timeline.json", b.Bytes())
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	count := map[string]int{}
	for _, e := range doc.TraceEvents {
		count[e["ph"].(string)]++
	}
	// 10 counter points, 3 outliers + 26 phases + 2 spans/spells + 2 REQ
	// slices per connection, a flow start and end per connection.
	if count["C"] != 10 || count["s"] != 2 || count["f"] != 2 || count["X"] < 3+26 {
		t.Errorf("events by phase %v", count)
	}
}
