package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/qplife"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// BenchmarkQPLifeRecords: what one QP's identity records cost a node:
// its events through qplife's tracker (create, INIT, RTR with the remote
// QPN from netlink, RTS, destroy) and its three records (created,
// connected, ended) through the sink to a store that takes them. At a
// churn of 1000 QPs a second, the node's added CPU is 1000 x ns/op.
//
//	go test -run '^$' -bench QPLifeRecords -benchmem ./internal/fleet/otlp
func BenchmarkQPLifeRecords(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	s, err := New(context.Background(), srv.URL, Options{Node: "node-b", QueueSize: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	tr := qplife.New(qplife.Options{Node: "node-b", Out: s.WriteQP})
	owner := rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{Cgroup: "/kubepods/pod1234/cri-containerd-3f2a", ContainerID: "3f2a", Runtime: "containerd", PodUID: "1234-5678"}}
	e := rdma.Event{Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "mlx5_0", Port: 1, QPType: rdma.QPTypeRC, Has: rdma.HasLQPN | rdma.HasQPType | rdma.HasPort, Owner: owner}}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		qpn := uint32(i & 0xffffff)
		e.LQPN, e.Time = qpn, now
		e.Kind, e.Resource.Has = rdma.EvCreate, e.Resource.Has&^rdma.HasState
		tr.Event(&e)
		e.Kind = rdma.EvModify
		for _, st := range []rdma.QPState{rdma.QPStateInit, rdma.QPStateRTR} {
			e.SetState(uint8(st))
			tr.Event(&e)
		}
		tr.RemoteQPN("mlx5_0", qpn, qpn+1, now)
		e.SetState(uint8(rdma.QPStateRTS))
		tr.Event(&e)
		e.Kind = rdma.EvDestroy
		tr.Event(&e)
	}
	b.StopTimer()
	st := s.Close(context.Background())
	if st.Emitted != uint64(3*b.N) {
		b.Fatalf("%d records for %d QPs: %+v", st.Emitted, b.N, st)
	}
	b.ReportMetric(float64(st.Lost()), "lost")
}
