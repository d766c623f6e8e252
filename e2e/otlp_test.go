//go:build e2e

package e2e

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	idrecords "github.com/rdmatrace/rdmatrace/internal/fleet/records"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestTraceSendsEventsToAnOTLPReceiver: trace --otlp while the churn runs:
// a local OTLP/HTTP receiver (decoding as a collector does) gets one log
// record per event trace -j printed, with the same event, type and owner,
// and the node's GID table records; trace says all were sent.
func TestTraceSendsEventsToAnOTLPReceiver(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	var mu sync.Mutex
	var got []*logspb.LogRecord
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collogs.ExportLogsServiceRequest
		if r.URL.Path != "/v1/logs" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "want POST /v1/logs with an ExportLogsServiceRequest", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				got = append(got, sl.LogRecords...)
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	tr := startTrace(t, "--no-snapshot", "--otlp", "http://"+ln.Addr().String())
	run(t, filepath.Join(*workloads, "churn"), device, "20")
	evs := tr.stop()
	said := tr.stderr.String()
	if !strings.Contains(said, "otlp: ") || strings.Contains(said, "refused") {
		t.Errorf("trace --otlp said %q; want every event sent", said)
	}
	mu.Lock()
	defer mu.Unlock()
	// Beside the events: the node's identity records (its GID table, and
	// its QPs: the churn makes none).
	all, gids := got, 0
	got = nil
	for _, r := range all {
		switch r.EventName {
		case idrecords.EventGID:
			gids++
		case idrecords.EventQP:
			t.Errorf("a QP identity record, and the churn makes no QP: %v", r)
		default:
			got = append(got, r)
		}
	}
	if gids == 0 {
		t.Errorf("no GID table record among the %d records", len(all))
	}
	if len(evs) == 0 || len(got) != len(evs) {
		t.Fatalf("trace -j printed %d events, the receiver got %d event records", len(evs), len(got))
	}
	attr := func(r *logspb.LogRecord, key string) string {
		for _, kv := range r.Attributes {
			if kv.Key == key {
				if s := kv.Value.GetStringValue(); s != "" {
					return s
				}
				return str(kv.Value.GetIntValue())
			}
		}
		return ""
	}
	for i, e := range evs {
		r := got[i]
		// trace -j's keys, those it has: the same values.
		keys := map[string]string{"event": e.Kind.String()}
		if e.Has(rdma.EvHasRes) {
			keys["res"] = e.Type.String()
		}
		if e.Has(rdma.EvHasOwner) {
			keys["comm"], keys["pid"] = e.Owner.Comm, e.tid()
		}
		for _, k := range []string{"event", "res", "comm", "pid"} {
			if want, ok := keys[k]; ok && attr(r, k) != want {
				t.Errorf("record %d: %s = %q, trace -j says %v (%v)", i, k, attr(r, k), want, e)
			}
		}
		if r.EventName != "rdma."+e.Kind.String() {
			t.Errorf("record %d: event name %q, want rdma.%v", i, r.EventName, e.Kind)
		}
	}
	t.Logf("%d events, %d records; %s", len(evs), len(got), strings.TrimSpace(said))
}
