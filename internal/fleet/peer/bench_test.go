package peer_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var benchVLogs = flag.String("bench-vlogs", "", "VictoriaLogs' binary: BenchmarkFindAmong10000Records starts it and fills it")

// BenchmarkFindAmong10000Records: a VictoriaLogs holding 10 000 QP records
// (10 nodes, 250 QPNs each used twice, created, connected and ended each
// lifetime but the last, which stays alive) and the nodes' GID tables;
// each operation is one `peer` question (a random node, QPN and, for half
// of them, a time). It reports the p50 and p99 of a question.
//
//	go test ./internal/fleet/peer -run '^$' -bench Among10000 -bench-vlogs PATH/victoria-logs
func BenchmarkFindAmong10000Records(b *testing.B) {
	if *benchVLogs == "" {
		b.Skip("-bench-vlogs: VictoriaLogs' binary is needed (guest/vlogs.sh builds it)")
	}
	base := startVictoriaLogsB(b, *benchVLogs)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	n := 0
	for node := 1; node <= 10; node++ {
		name := fmt.Sprintf("node-%02d", node)
		s, err := otlp.New(context.Background(), base+"/insert/opentelemetry/v1/logs", otlp.Options{Node: name, QueueSize: 1 << 14})
		if err != nil {
			b.Fatal(err)
		}
		gid := netip.AddrFrom16(netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", node)).As16())
		s.WriteGID(&rdma.GIDEntry{DevName: "mlx5_0", Port: 1, Index: 3, GID: gid, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "ens1f0"}, t0)
		for qpn := uint32(100); qpn < 350; qpn++ {
			for life := 0; life < 2; life++ {
				created := t0.Add(time.Duration(life)*30*time.Minute + time.Duration(qpn)*time.Second)
				q := rdma.QPIdentity{Node: name, Dev: "mlx5_0", Port: 1, QPN: qpn, Type: rdma.QPTypeRC, Created: created,
					Owner: rdma.Owner{PID: uint32(1000 + life), TID: uint32(1000 + life), Comm: "train.py"}}
				q.Change, q.Time = rdma.QPCreated, created
				s.WriteQP(&q)
				q.RemoteGID, q.RemoteQPN, q.HasRemoteQPN = gid, qpn+1, true
				q.Change, q.Time = rdma.QPConnected, created.Add(time.Millisecond)
				s.WriteQP(&q)
				n += 2
				if life == 0 {
					q.Change, q.Time, q.Fate, q.Ended, q.Signal = rdma.QPEnded, created.Add(10*time.Minute), rdma.FateSignal, created.Add(10*time.Minute), 9
					s.WriteQP(&q)
					n++
				}
			}
		}
		if st := s.Close(context.Background()); st.Lost() != 0 {
			b.Fatalf("%s: %+v", name, st)
		}
	}
	forceFlush(b, base)
	st, err := store.Open(base, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := peer.Query{Addr: netip.MustParseAddr(fmt.Sprintf("10.0.0.%d", 1+rng.Intn(10))), QPN: uint32(100 + rng.Intn(250))}
		if i%2 == 0 {
			q.At = t0.Add(time.Duration(rng.Intn(3600)) * time.Second)
		}
		begin := time.Now()
		a, err := peer.Find(context.Background(), st, q)
		took = append(took, time.Since(begin))
		if err != nil || (q.At.IsZero() && a.QP == nil) {
			b.Fatalf("%+v: %v %+v", q, err, a)
		}
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(n+10), "records")
}
