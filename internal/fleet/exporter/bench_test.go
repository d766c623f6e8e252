package exporter

import (
	"context"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// BenchmarkScrape10k is one scrape's work past netlink (counting, ranking
// owners, encoding) at 10,200 live objects of 200 processes: what the
// exporter adds to reading the kernel (guest/bench-exporter.sh measures
// the whole scrape).
func BenchmarkScrape10k(b *testing.B) {
	var s rdma.NodeState
	s.Devices = []rdma.Device{{Index: 1, Name: "rxe0"}}
	for i := 0; i < 3400; i++ {
		o := rdma.Owner{PID: uint32(1000 + i%200), Comm: "job" + strconv.Itoa(i%200)}
		for _, t := range []rdma.ResType{rdma.ResPD, rdma.ResCQ, rdma.ResMR} {
			s.Resources = append(s.Resources, rdma.Resource{Type: t, DevName: "rxe0", Has: rdma.HasPID, Owner: o})
		}
	}
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return s }, 10)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		mfs, err := gatherer(x, reg).Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkEventsHeap feeds 160,000 events of a churn (create, destroy
// begin and commit of PDs, CQs and MRs) and reports the live heap after
// them: the exporter's memory must not grow with the events it has seen.
func BenchmarkEventsHeap(b *testing.B) {
	t0 := time.Now()
	for b.Loop() {
		x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }, 10)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for r := 0; r < 20000; r++ {
			for j, t := range []rdma.ResType{rdma.ResPD, rdma.ResCQ, rdma.ResMR} {
				e := rdma.Event{Resource: rdma.Resource{Type: t, DevName: "rxe0", DevIndex: 1, Owner: rdma.Owner{PID: 7, Comm: "churn"}}, ID: uint32(r*3 + j), Obj: uint64(r*3+j) + 1, Time: t0,
					Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
				for _, k := range []rdma.EventKind{rdma.EvCreate, rdma.EvDestroyBegin, rdma.EvDestroy} {
					e.Kind = k
					x.Event(&e)
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "heap-KiB-kept")
		runtime.KeepAlive(x)
	}
}
