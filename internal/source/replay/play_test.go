package replay

import (
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// trace -r's use case: the events the filter keeps, up to the count, a
// bad line told and counted, the rest still read.
func TestPlayKeepsCountsAndGoesOnPastBadLines(t *testing.T) {
	good := `{"time":"2026-11-23T18:00:00.5Z","event":"create","res":"pd","ifname":"rxe0","id":3,"pid":301,"comm":"leakqp"}`
	qp := `{"time":"2026-11-23T18:00:01Z","event":"create","res":"qp","ifname":"rxe0","lqpn":17,"type":"RC","pid":301,"comm":"leakqp"}`
	in := good + "\n{\"time\":\"yesterday\"}\n" + qp + "\n" + good + "\n" + good + "\n"
	var kept []rdma.ResType
	var bad []string
	flushes := 0
	n, err := NewReader(strings.NewReader(in), "rec.ndjson").Play(PlayOptions{
		Keep:  func(e *rdma.Event) bool { return e.Type == rdma.ResPD },
		Count: 2,
		Write: func(e *rdma.Event) error { kept = append(kept, e.Type); return nil },
		Flush: func() error { flushes++; return nil },
		Bad:   func(le *lineerr.Error) { bad = append(bad, le.Error()) },
	})
	if err != nil || n != 1 || len(kept) != 2 || len(bad) != 1 || !strings.HasPrefix(bad[0], "rec.ndjson:2:") || flushes != 2 {
		t.Errorf("Play = %d, %v; kept %v, bad %q, %d flushes", n, err, kept, bad, flushes)
	}
}
