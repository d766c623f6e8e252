package otlp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// receiver is a local OTLP/HTTP logs endpoint: it decodes what it is sent
// as a collector would, or refuses everything with status.
type receiver struct {
	mu      sync.Mutex
	records []*logspb.LogRecord
	status  int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/logs" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/logs, protobuf", http.StatusBadRequest)
		return
	}
	if rc.status != 0 {
		http.Error(w, "refused", rc.status)
		return
	}
	var req collogs.ExportLogsServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			rc.records = append(rc.records, sl.LogRecords...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&collogs.ExportLogsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func events() []rdma.Event {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 123456000, time.UTC)
	return []rdma.Event{
		{Kind: rdma.EvCreate, Time: t0, Resource: rdma.Resource{Has: rdma.HasLQPN | rdma.HasQPType, Type: rdma.ResQP, DevName: "rxe0", LQPN: 17, QPType: rdma.QPTypeRC, Owner: rdma.Owner{PID: 812, TID: 812, Comm: "rping"}}, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser},
		{Kind: rdma.EvModify, Time: t0.Add(time.Millisecond), Resource: rdma.Resource{Has: rdma.HasLQPN | rdma.HasQPType | rdma.HasState, Type: rdma.ResQP, DevName: "rxe0", LQPN: 17, QPState: rdma.QPStateErr}, Flags: rdma.EvHasRes | rdma.EvHasDev},
		{Kind: rdma.EvCMEventHandler, Time: t0.Add(2 * time.Millisecond), Resource: rdma.Resource{Type: rdma.ResCMID}, Flags: rdma.EvHasRes | rdma.EvHasCM,
			CMEvent: rdma.CMEvent(2), Status: -110},
	}
}

// sendEvents writes events() to a Sink sending to rc, served locally
// until the test ends; the caller closes the Sink.
func sendEvents(t *testing.T, rc *receiver) (*Sink, []rdma.Event) {
	t.Helper()
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	s, err := New(context.Background(), srv.URL, Options{NoRetry: true, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	for i := range evs {
		s.Write(&evs[i])
	}
	return s, evs
}

// TestEventsReachALocalReceiver: each event is one record with its time,
// its human line as body, its JSON keys as attributes, WARN for a QP to
// ERR and a failed rdma_cm event.
func TestEventsReachALocalReceiver(t *testing.T) {
	rc := &receiver{}
	s, evs := sendEvents(t, rc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := s.Close(ctx)
	if st.Emitted != 3 || st.Sent != 3 || st.Lost() != 0 || st.Queued != 0 {
		t.Errorf("stats %+v, want 3 emitted and sent", st)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.records) != 3 {
		t.Fatalf("the receiver got %d records, want 3", len(rc.records))
	}
	r := rc.records[0]
	attrs := map[string]string{}
	for _, kv := range r.Attributes {
		if v := kv.Value.GetStringValue(); v != "" {
			attrs[kv.Key] = v
		} else {
			attrs[kv.Key] = strings.TrimSpace(kv.Value.String())
		}
	}
	if r.TimeUnixNano != uint64(evs[0].Time.UnixNano()) || r.EventName != "rdma.create" || r.SeverityText != "INFO" ||
		!strings.Contains(r.Body.GetStringValue(), "lqpn=17") || attrs["comm"] != "rping" || attrs["res"] != "qp" || attrs["ifname"] != "rxe0" {
		t.Errorf("record 0: time %d event %q severity %q body %q attrs %v", r.TimeUnixNano, r.EventName, r.SeverityText, r.Body.GetStringValue(), attrs)
	}
	for i, want := range []string{"INFO", "WARN", "WARN"} {
		if got := rc.records[i].SeverityText; got != want {
			t.Errorf("record %d (%s): severity %s, want %s", i, rc.records[i].Body.GetStringValue(), got, want)
		}
	}
}

// TestRefusedEventsAreCounted: a collector that refuses everything as a
// bad request: the events are counted as refused (not retried: they
// would be refused again), and the summary says so.
func TestRefusedEventsAreCounted(t *testing.T) {
	s, _ := sendEvents(t, &receiver{status: http.StatusBadRequest})
	st := s.Close(context.Background())
	if st.Sent != 0 || st.Refused != 3 || st.Dropped != 0 || st.Retries != 0 || st.LastError == nil {
		t.Errorf("stats %+v, want 3 refused, none retried", st)
	}
	if sum := st.Summary(s.Endpoint()); !strings.Contains(sum, "0 records sent") || !strings.Contains(sum, "3 refused") {
		t.Errorf("summary %q", sum)
	}
}

// A collector that is unavailable (503) with NoRetry: each batch is
// dropped at its first failure, and counted.
func TestUnavailableWithoutRetryIsDropped(t *testing.T) {
	s, _ := sendEvents(t, &receiver{status: http.StatusServiceUnavailable})
	st := s.Close(context.Background())
	if st.Sent != 0 || st.Dropped != 3 || st.Refused != 0 {
		t.Errorf("stats %+v, want 3 dropped", st)
	}
	if sum := st.Summary(s.Endpoint()); !strings.Contains(sum, "3 lost") || !strings.Contains(sum, "3 dropped") {
		t.Errorf("summary %q", sum)
	}
}

func TestEndpointMustBeAnHTTPURL(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:4318", "grpc://x:4317", ""} {
		if _, err := New(context.Background(), bad, Options{}); err == nil || !strings.Contains(err.Error(), "OTLP/HTTP URL") {
			t.Errorf("New(%q): %v", bad, err)
		}
	}
}

// The SDK's errors (each failed export) reach rdmatrace's log, one line
// per kind per interval in rdmatrace's format, not its raw log lines.
func TestSDKErrorsGoToOurLogRateLimited(t *testing.T) {
	var log syncBuffer
	srv := httptest.NewServer(&receiver{status: http.StatusServiceUnavailable})
	defer srv.Close()
	s, err := New(context.Background(), srv.URL, Options{NoRetry: true, Interval: 5 * time.Millisecond, Log: ratelog.New(&log, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	for range 5 { // five batches, five failed exports
		s.Write(&evs[0])
		time.Sleep(30 * time.Millisecond)
	}
	st := s.Close(context.Background())
	if st.Dropped < 2 {
		t.Errorf("stats %+v, want several failed exports", st)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "rdmatrace: otlp: ") || !strings.Contains(lines[0], "request failure") {
		t.Errorf("log %q, want one rdmatrace line for %d failed exports", lines, st.Dropped)
	}
}

// The SDK's logr logger: errors and warnings as rdmatrace's lines,
// sanitized; info and debug not at all.
func TestSDKLoggerLinesAreOurs(t *testing.T) {
	var log syncBuffer
	installLog(ratelog.New(&log, time.Minute))
	l := logr.New(logSink{})
	l.Error(errors.New("export failed\x1b[2J"), "otlplog: parse endpoint url", "url", "http://x/\nforged line")
	l.V(1).Info("dropped log records", "dropped", 17)
	l.V(1).Info("dropped log records", "dropped", 18) // the same kind, within the interval
	l.V(4).Info("info")
	l.V(8).Info("debug")
	want := `rdmatrace: otlp: otlplog: parse endpoint url: export failed\x1b[2J url=http://x/\x0aforged line` + "\n" +
		"rdmatrace: otlp: dropped log records dropped=17\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
}

func TestUnparsableEndpointIsRefused(t *testing.T) {
	if _, err := New(context.Background(), "http://127.0.0.1:4318/%zz", Options{}); err == nil || !strings.Contains(err.Error(), "invalid URL escape") {
		t.Errorf("an unparsable URL: %v, want refused rather than sent to the SDK's default endpoint", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The severity is Event.Failure's: ERROR when fatal, WARN for another
// failure or an error status, INFO for the rest.
func TestSeverityFollowsTheFailure(t *testing.T) {
	cm := func(ev rdma.CMEvent, status int32, kind rdma.EventKind) *rdma.Event {
		return &rdma.Event{Kind: kind, Flags: rdma.EvHasCM, CMEvent: ev, Status: status}
	}
	qp := func(st rdma.QPState) *rdma.Event {
		e := &rdma.Event{Kind: rdma.EvModify, Flags: rdma.EvHasRes, Resource: rdma.Resource{Type: rdma.ResQP}}
		e.SetState(uint8(st))
		return e
	}
	for _, tc := range []struct {
		name string
		e    *rdma.Event
		want string
	}{
		{"a rejected connect", cm(rdma.CMRejected, 8, rdma.EvCMEventHandler), "WARN"},
		{"a device removed under an ID", cm(rdma.CMEvDeviceRemoval, 0, rdma.EvCMEventHandler), "ERROR"},
		{"a QP moved to ERR (a failure, or a disconnect)", qp(rdma.QPStateErr), "WARN"},
		{"a QP moved to SQE", qp(rdma.QPStateSQE), "WARN"},
		{"a QP moved to RTS", qp(rdma.QPStateRTS), "INFO"},
		{"the rejected connect's done event", cm(rdma.CMRejected, 8, rdma.EvCMEventDone), "WARN"},
		{"an established connection", cm(rdma.CMEvEstablished, 0, rdma.EvCMEventHandler), "INFO"},
		{"a port taken", &rdma.Event{Kind: rdma.EvPortBusy, Status: -98}, "WARN"},
	} {
		if _, got := severityOf(tc.e); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The provider lets records repeat a key (the SDK then skips its search
// for repeats): an event's attributes never do, over every recording in
// testdata.
func TestAnEventsAttributesNeverRepeatAKey(t *testing.T) {
	files, _ := filepath.Glob("../../../testdata/*/*.ndjson")
	if len(files) == 0 {
		t.Fatal("no recordings in testdata")
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := replay.NewReader(bytes.NewReader(b), f)
		var ev rdma.Event
		for r.Next(&ev) != io.EOF {
			seen := map[string]bool{}
			for _, fl := range formats.AppendEventObject(nil, &ev) {
				if seen[fl.Key] {
					t.Errorf("%s: an event with key %q twice: %v", f, fl.Key, ev)
				}
				seen[fl.Key] = true
			}
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d events read", n)
	}
}
