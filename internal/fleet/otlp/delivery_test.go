package otlp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// store is a fake log store that can be down (it closes each connection
// without an answer, as a store whose process is gone behind a proxy
// would), unavailable (503), slow (it answers once hold is closed), or up. It
// keeps the QPN of every QP record it took, to check that each record
// written is either received once or counted as lost.
type store struct {
	mode     atomic.Value  // "up", "down", "unavailable", "slow"
	hold     chan struct{} // "slow": an answer waits until it is closed
	mu       sync.Mutex
	got      map[uint32]int
	requests atomic.Int64
}

func newStore() *store {
	s := &store{got: map[uint32]int{}}
	s.mode.Store("up")
	return s
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	switch s.mode.Load().(string) {
	case "down":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case "unavailable":
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	case "slow":
		<-s.hold
	}
	var req collogs.ExportLogsServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				for _, kv := range lr.Attributes {
					if kv.Key == "rdma.qp.num" {
						s.got[uint32(kv.Value.GetIntValue())]++
					}
				}
			}
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *store) received() map[uint32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[uint32]int, len(s.got))
	for k, v := range s.got {
		m[k] = v
	}
	return m
}

func qpRecord(n uint32) *rdma.QPIdentity {
	t := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	return &rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: n, Type: rdma.QPTypeRC, Created: t, Time: t,
		Change: rdma.QPCreated, Owner: rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw"}}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestStoreDownForAWhile: the store stops answering while records keep
// coming. Writing goes on without waiting; the queue keeps the newest
// records it can hold, drops the oldest and counts them; when the store
// is back the node sends what it kept, without a restart. Every record
// written is received exactly once or counted as dropped: the count of
// drops is exact.
func TestStoreDownForAWhile(t *testing.T) {
	for _, down := range []string{"down", "unavailable"} {
		t.Run("the store "+down, func(t *testing.T) {
			st := newStore()
			srv := httptest.NewServer(st)
			defer srv.Close()
			var log syncBuffer
			s, err := New(context.Background(), srv.URL, Options{Interval: 5 * time.Millisecond, QueueSize: 100, BatchSize: 10,
				Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Log: ratelog.New(&log, time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			n := uint32(1)
			write := func(k int) {
				for range k {
					s.WriteQP(qpRecord(n))
					n++
				}
			}
			write(20)
			waitFor(t, "the first records to arrive", func() bool { return len(st.received()) == 20 })

			st.mode.Store(down)
			before := st.requests.Load()
			write(1000) // ten times what the queue holds
			waitFor(t, "retries against the stopped store", func() bool { return st.requests.Load() > before+3 })
			mid := s.Stats()
			if mid.Dropped == 0 || mid.Queued > 100 || mid.Retries == 0 {
				t.Errorf("while the store is %s: %+v, want drops counted, at most 100 queued, retries", down, mid)
			}

			st.mode.Store("up")
			waitFor(t, "the queue to drain once the store is back", func() bool { return s.Stats().Queued == 0 })
			write(5) // and it goes on
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			end := s.Close(ctx)

			got := st.received()
			var dup []uint32
			for qpn, c := range got {
				if c != 1 {
					dup = append(dup, qpn)
				}
			}
			if len(dup) > 0 {
				t.Errorf("records received more than once: %v", dup)
			}
			written := uint64(n - 1)
			if end.Emitted != written || end.Sent != uint64(len(got)) || end.Dropped != written-uint64(len(got)) || end.Refused != 0 || end.Queued != 0 {
				t.Errorf("stats %+v; %d written, %d received: want every record sent or counted as dropped, exactly", end, written, len(got))
			}
			// What was kept is the newest: the last 5 and the records
			// queued last during the outage.
			for qpn := n - 5; qpn < n; qpn++ {
				if got[qpn] != 1 {
					t.Errorf("record %d, written after the store came back, was not received", qpn)
				}
			}
			if got[1020] != 1 {
				t.Errorf("the last record written during the outage was not received: the queue must drop the oldest")
			}
			if !strings.Contains(log.String(), "retrying") || !strings.Contains(log.String(), "takes records again") {
				t.Errorf("log %q: want the outage and the recovery said", log.String())
			}
			if sum := end.Summary(s.Endpoint()); !strings.Contains(sum, fmt.Sprintf("%d dropped", end.Dropped)) {
				t.Errorf("summary %q does not say the drops", sum)
			}
		})
	}
}

// A store that holds the first export unanswered: writing goes on while
// it waits (were Write to wait on the network, this test would hang),
// and once it answers, what the queue held arrives.
func TestSlowStoreDoesNotHoldWriting(t *testing.T) {
	st := newStore()
	st.hold = make(chan struct{})
	st.mode.Store("slow")
	srv := httptest.NewServer(st)
	defer srv.Close()
	s, err := New(context.Background(), srv.URL, Options{Interval: 5 * time.Millisecond, QueueSize: 4096, BatchSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	s.WriteQP(qpRecord(1))
	waitFor(t, "the first export to reach the store", func() bool { return st.requests.Load() == 1 })
	for i := uint32(2); i <= 2000; i++ {
		s.WriteQP(qpRecord(i))
	}
	if n := st.requests.Load(); n != 1 {
		t.Fatalf("%d requests while the first is held, want 1", n)
	}
	close(st.hold)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	end := s.Close(ctx)
	if end.Sent != 2000 || end.Lost() != 0 || len(st.received()) != 2000 {
		t.Errorf("stats %+v, received %d: want all 2000 sent", end, len(st.received()))
	}
}

// Closing while the store is down ends by the deadline and counts what
// could not be sent as dropped.
func TestCloseWithTheStoreDownEndsByItsDeadline(t *testing.T) {
	st := newStore()
	st.mode.Store("down")
	srv := httptest.NewServer(st)
	defer srv.Close()
	s, err := New(context.Background(), srv.URL, Options{Interval: 5 * time.Millisecond, Backoff: 10 * time.Millisecond, Log: ratelog.New(io.Discard, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= 50; i++ {
		s.WriteQP(qpRecord(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	end := s.Close(ctx)
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("Close took %v with a 300 ms deadline", took)
	}
	if end.Sent != 0 || end.Dropped != 50 || end.Queued != 0 {
		t.Errorf("stats %+v, want the 50 records counted as dropped", end)
	}
	if s.Dropped() != 50 {
		t.Errorf("Dropped() = %d, want 50", s.Dropped())
	}
}

func TestOnlyLastingRefusalsArePermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("failed to send logs to http://x/v1/logs: 400 Bad Request (body: bad)"), true},
		{errors.New("failed to send logs to http://x/v1/logs: 413 Request Entity Too Large (body: big)"), true},
		{errors.New("failed to send logs to http://x/v1/logs: 408 Request Timeout (body: )"), false},
		{errors.New("failed to send logs to http://x/v1/logs: 500 Internal Server Error (body: )"), false},
		{errors.New("retry-able request failure: body: try later"), false},
		{errors.New(`Post "http://x/v1/logs": dial tcp 127.0.0.1:9: connect: connection refused`), false},
		{context.DeadlineExceeded, false},
		{errors.New("request body too large: exceeded 1024 bytes"), true},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The exporter's metrics of the delivery: rdmatrace_otlp_dropped_total
// counts what will never reach the store, refused and dropped alike.
func TestTheCollectorServesTheCounts(t *testing.T) {
	srv := httptest.NewServer(&receiver{status: http.StatusBadRequest})
	defer srv.Close()
	s, err := New(context.Background(), srv.URL, Options{Interval: 5 * time.Millisecond, QueueSize: 2, BatchSize: 1, Log: ratelog.New(io.Discard, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= 3; i++ {
		s.WriteQP(qpRecord(i))
	}
	waitFor(t, "the records to be refused", func() bool { st := s.Stats(); return st.Lost() == 3 })
	want := `# HELP rdmatrace_otlp_dropped_total OTLP records (events and identity records) that will never reach the store: dropped from the full queue while the store was down or slow, or refused by it.
# TYPE rdmatrace_otlp_dropped_total counter
rdmatrace_otlp_dropped_total 3
`
	if err := testutil.CollectAndCompare(s.Collector(), strings.NewReader(want), "rdmatrace_otlp_dropped_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(s.Collector()); n != 3 {
		t.Errorf("%d metrics, want dropped, sent and queued", n)
	}
	s.Close(context.Background())
}
