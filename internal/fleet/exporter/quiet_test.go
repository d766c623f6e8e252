package exporter

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay/replaytest"
)

// An rping -C pair that ends normally (traced on 6.1 and 6.12) counts no
// failure: the client's move to ERR comes just before its disconnect, the
// server's just after its DISCONNECTED. A killed server still counts the
// client's first error completion. Scraped well after the last event, so
// that a move held for its disconnect would have counted by then.
func TestNormalEndsAreNoFailures(t *testing.T) {
	killed := []string{"rxe0", "1", "qp-error", "rping", "", ""}
	for name, want := range map[string][]string{"tracer/6.1/trace.ndjson": nil, "tracer/6.12/trace.ndjson": nil, "why/rping-killed-peer.ndjson": killed} {
		x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }, 5)
		reg := prometheus.NewPedanticRegistry()
		if err := x.Register(reg); err != nil {
			t.Fatal(err)
		}
		evs := replaytest.Events(t, filepath.Join("..", "..", "..", "testdata", name))
		for i := range evs {
			x.Event(&evs[i])
		}
		x.now = func() time.Time { return evs[len(evs)-1].Time.Add(time.Minute) }
		n := testutil.CollectAndCount(x.failures)
		switch {
		case want == nil && n != 0:
			t.Errorf("%s: %d failure series, want none", name, n)
		case want != nil && (n != 1 || testutil.ToFloat64(x.failures.WithLabelValues(want...)) != 1):
			t.Errorf("%s: %d failure series, want one: %v 1", name, n, want)
		}
	}
}

// A QP moved to ERR with no disconnect and no destroy counts once the
// hold is over: at the scrape, though no event came since.
func TestAMoveToERRNothingSettlesCountsAtTheScrape(t *testing.T) {
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }, 5)
	reg := prometheus.NewPedanticRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	m := &rdma.Event{Kind: rdma.EvModify, Time: t0, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", LQPN: 17, Has: rdma.HasLQPN, Owner: rdma.Owner{PID: 7, Comm: "app"}}}
	m.SetState(uint8(rdma.QPStateErr))
	x.Event(m)
	x.now = func() time.Time { return t0.Add(time.Second) }
	if n := testutil.CollectAndCount(x.failures); n != 0 {
		t.Errorf("%d series 1 s after the move, want none yet", n)
	}
	x.now = func() time.Time { return t0.Add(3 * time.Second) }
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() == "rdma_failures_total" {
			for _, m := range mf.GetMetric() {
				got = append(got, m.String())
			}
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `value:"QP_ERR"`) || !strings.Contains(got[0], `value:"app"`) {
		t.Errorf("rdma_failures_total 3 s after the move: %v, want app's QP_ERR", got)
	}
}
