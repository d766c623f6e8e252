// Package otlp sends rdmatrace's records to an OpenTelemetry collector or
// a log store that takes OTLP (VictoriaLogs) as OTLP log records
// (OTLP/HTTP, protobuf), with the official Go SDK's exporter: each event
// as one record (its body the human line, its attributes the keys of
// `trace -j`, its time the event's), and the identity records of the
// node's QPs and GID table (package records). Delivery survives a store
// that is down or slow: writing never blocks, a bounded queue keeps what
// waits, what it cannot keep is dropped and counted, and sending resumes
// by itself (delivery.go). Nothing is lost silently.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/fleet/records"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Sink is an event writer whose events become OTLP log records; it also
// writes identity records (WriteQP, WriteGID).
type Sink struct {
	endpoint string
	node     string
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	d        *delivery
	mu       sync.Mutex // the buffers below: events and identity records come from several goroutines
	obj      formats.Object
	attrs    []attribute.KeyValue
}

// Options tune a Sink; the zero value is what the CLI uses.
type Options struct {
	// NoRetry gives up on a batch at its first failed export (tests);
	// by default a batch is retried until the store takes it.
	NoRetry bool
	// Interval is how long records may wait in the queue before they
	// are sent (default 1 s); a full batch goes at once.
	Interval time.Duration
	// Log takes the SDK's and the delivery's errors and warnings (nil:
	// stderr, one line per kind every 10 s). The SDK's handler is
	// global: the last Sink's Log given wins.
	Log *ratelog.Logger
	// Node is the node's name, the records' host.name (default: the
	// host name).
	Node string
	// QueueSize is how many records wait at most while the store is
	// down or slow (default 8192, about 10 MB); past it the oldest are
	// dropped and counted.
	QueueSize int
	// BatchSize is how many records one export carries at most (default 512).
	BatchSize int
	// Backoff is the first wait after a failed export (default 1 s),
	// doubled after each failure up to MaxBackoff (default 30 s).
	Backoff, MaxBackoff time.Duration
}

// Defaults of Options.
const (
	DefaultQueueSize = 8192
	DefaultBatchSize = 512
)

// New makes a Sink sending to endpoint, a URL such as
// http://127.0.0.1:4318 (the path /v1/logs is added when it has none) or
// VictoriaLogs' http://HOST:9428/insert/opentelemetry/v1/logs. The
// OTEL_EXPORTER_OTLP_* variables (headers, TLS, timeout, compression)
// apply as usual.
func New(ctx context.Context, endpoint string, o Options) (*Sink, error) {
	installLog(o.Log) // before the SDK reads its variables: it reports bad ones
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("--otlp %q: want an OTLP/HTTP URL, http://HOST:PORT (4318 is OTLP/HTTP's port)", endpoint)
	}
	// The SDK would log an unparsable URL and send to its default,
	// localhost:4318.
	if _, err := url.Parse(endpoint); err != nil {
		return nil, fmt.Errorf("--otlp %q: %w", endpoint, errors.Unwrap(err))
	}
	url := endpoint
	if rest := url[strings.Index(url, "//")+2:]; !strings.Contains(rest, "/") {
		url += "/v1/logs"
	}
	// The delivery retries (delivery.go); the exporter tries once.
	exp, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(url), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, fmt.Errorf("--otlp %s: %w", endpoint, err)
	}
	o = o.withDefaults()
	if o.Node == "" {
		o.Node, _ = os.Hostname()
	}
	res := resource.NewSchemaless(semconv.ServiceName("rdmatrace"), semconv.HostName(o.Node))
	d := newDelivery(exp, o, sdkLog.Load)
	// Our records never repeat a key: the SDK need not look for repeats
	// (a map per record, a quarter of a record's cost).
	p := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(d), sdklog.WithAllowKeyDuplication())
	return &Sink{endpoint: endpoint, node: o.Node, provider: p, logger: p.Logger("rdmatrace"), d: d, obj: make(formats.Object, 0, 24)}, nil
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = max(30*time.Second, o.Backoff)
	}
	return o
}

// Node is the name the records carry as host.name.
func (s *Sink) Node() string { return s.node }

// Write emits one event as a log record. It does not block on the network.
func (s *Sink) Write(e *rdma.Event) {
	var r otellog.Record
	r.SetTimestamp(e.Time)
	r.SetObservedTimestamp(time.Now())
	r.SetEventName("rdma." + e.Kind.String())
	r.SetBody(attribute.StringValue(formats.EventText(e)))
	sev, text := severityOf(e)
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obj = formats.AppendEventObject(s.obj[:0], e)
	attrs := make([]attribute.KeyValue, 0, len(s.obj))
	for _, f := range s.obj {
		attrs = append(attrs, attributeOf(f))
	}
	r.AddAttributes(attrs...)
	s.logger.Emit(context.Background(), r)
}

// WriteQP emits one QP identity record (records.EventQP), at q.Time. It
// does not block on the network.
func (s *Sink) WriteQP(q *rdma.QPIdentity) {
	var r otellog.Record
	r.SetTimestamp(q.Time)
	r.SetObservedTimestamp(time.Now())
	r.SetEventName(records.EventQP)
	r.SetBody(attribute.StringValue(records.QPBody(q)))
	r.SetSeverity(otellog.SeverityInfo)
	r.SetSeverityText("INFO")
	if q.Change == rdma.QPFailed {
		r.SetSeverity(otellog.SeverityWarn)
		r.SetSeverityText("WARN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attrs = records.QPAttributes(s.attrs[:0], q)
	r.AddAttributes(s.attrs...)
	s.logger.Emit(context.Background(), r)
}

// WriteGID emits one GID table entry (records.EventGID), read at t.
func (s *Sink) WriteGID(e *rdma.GIDEntry, t time.Time) {
	var r otellog.Record
	r.SetTimestamp(t)
	r.SetObservedTimestamp(time.Now())
	r.SetEventName(records.EventGID)
	r.SetBody(attribute.StringValue(records.GIDBody(e)))
	r.SetSeverity(otellog.SeverityInfo)
	r.SetSeverityText("INFO")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attrs = records.GIDAttributes(s.attrs[:0], e)
	r.AddAttributes(s.attrs...)
	s.logger.Emit(context.Background(), r)
}

// severityOf is a record's severity: ERROR for a fatal failure (a device
// removed under an rdma_cm ID, and the fatal async events), WARN for
// another failure (a QP moved to ERR among them) or an event with an
// error status, INFO for the rest; the failures are rdma.Event.Failure's.
func severityOf(e *rdma.Event) (otellog.Severity, string) {
	if f, ok := e.Failure(); ok {
		if f.Severity == rdma.SevFatal {
			return otellog.SeverityError, "ERROR"
		}
		return otellog.SeverityWarn, "WARN"
	}
	if e.Status != 0 {
		return otellog.SeverityWarn, "WARN"
	}
	return otellog.SeverityInfo, "INFO"
}

// attributeOf is one key of `trace -j` as a log attribute, valued as JSON
// has it: numbers as numbers, the rest as text.
func attributeOf(f formats.Field) attribute.KeyValue {
	switch f.Kind {
	case formats.Num, formats.Int:
		return attribute.Int64(f.Key, int64(f.Num))
	case formats.Hex:
		return attribute.String(f.Key, strconv.FormatUint(f.Num, 16))
	case formats.Secs, formats.Micros: // milliseconds as seconds, nanoseconds as microseconds, as in JSON
		return attribute.Float64(f.Key, float64(f.Num)/1000)
	case formats.Bool:
		return attribute.Bool(f.Key, f.Num != 0)
	case formats.StrList, formats.NumList:
		return attribute.StringSlice(f.Key, f.List)
	}
	return attribute.String(f.Key, f.Text())
}

// Stats is what became of the records written: each is sent, refused by
// the store, dropped (the queue was full, a batch failed with NoRetry, or
// it was still unsent when Close's deadline came) or still queued.
type Stats struct {
	Emitted, Sent, Refused, Dropped, Queued uint64
	// Retries counts the exports tried again after a failure.
	Retries   uint64
	LastError error
}

// Lost is what will never reach the store: refused and dropped.
func (st Stats) Lost() uint64 { return st.Refused + st.Dropped }

// Stats says what became of the records so far.
func (s *Sink) Stats() Stats {
	d := s.d
	st := Stats{Emitted: d.emitted.Load(), Sent: d.sent.Load(), Refused: d.refused.Load(),
		Dropped: d.dropped.Load() + d.failed.Load(), Queued: uint64(d.queued()), Retries: d.retries.Load()}
	if v := d.lastErr.Load(); v != nil {
		st.LastError = *v
	}
	return st
}

// Dropped is the records that will never reach the store so far (the
// exporter's rdmatrace_otlp_dropped_total): dropped and refused.
func (s *Sink) Dropped() uint64 { return s.Stats().Lost() }

// Close sends what is queued (waiting at most until ctx ends; what is
// left then is dropped) and says what became of every record.
func (s *Sink) Close(ctx context.Context) Stats {
	_ = s.provider.Shutdown(ctx)
	return s.Stats()
}

// Summary is the line the CLI prints at the end.
func (st Stats) Summary(endpoint string) string {
	s := fmt.Sprintf("otlp: %d records sent to %s", st.Sent, endpoint)
	if st.Lost() > 0 {
		s += fmt.Sprintf(", %d lost: %d refused by the store, %d dropped (queue full, or unsent at the end)", st.Lost(), st.Refused, st.Dropped)
		if st.LastError != nil {
			s += " (last error: " + st.LastError.Error() + ")"
		}
	}
	if st.Queued > 0 {
		s += ", " + strconv.FormatUint(st.Queued, 10) + " still queued"
	}
	return s
}

// Endpoint is where the sink sends.
func (s *Sink) Endpoint() string { return s.endpoint }
