// Package otlp sends rdmatrace's events to an OpenTelemetry collector as
// OTLP log records (OTLP/HTTP, protobuf), with the official Go SDK: one
// record per event, its body the human line, its attributes the keys of
// `trace -j`, its time the event's. Nothing is lost silently: what the
// collector refused and what the SDK's queue dropped are counted.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Sink is an event writer whose events become OTLP log records.
type Sink struct {
	endpoint string
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	counting *countingExporter
	emitted  atomic.Uint64
	obj      formats.Object
}

// Options tune a Sink; the zero value is what the CLI uses.
type Options struct {
	// NoRetry gives up on the first failed export (tests); the CLI
	// retries as the SDK does by default.
	NoRetry bool
	// Interval is how long records may wait in the batch (default 1 s).
	Interval time.Duration
	// Log takes the SDK's errors and warnings (nil: stderr, one line per
	// kind every 10 s). The SDK's handler is global: the last Sink's
	// Log given wins.
	Log *ratelog.Logger
}

// New makes a Sink sending to endpoint, a URL such as
// http://127.0.0.1:4318 (the path /v1/logs is added when it has none).
// The OTEL_EXPORTER_OTLP_* variables (headers, TLS) apply as usual.
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
	opts := []otlploghttp.Option{otlploghttp.WithEndpointURL(url)}
	if o.NoRetry {
		opts = append(opts, otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	}
	exp, err := otlploghttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--otlp %s: %w", endpoint, err)
	}
	interval := o.Interval
	if interval == 0 {
		interval = time.Second
	}
	host, _ := os.Hostname()
	res := resource.NewSchemaless(semconv.ServiceName("rdmatrace"), semconv.HostName(host))
	ce := &countingExporter{Exporter: exp}
	p := sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(ce, sdklog.WithExportInterval(interval))))
	return &Sink{endpoint: endpoint, provider: p, logger: p.Logger("rdmatrace"), counting: ce, obj: make(formats.Object, 0, 24)}, nil
}

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
	s.obj = formats.AppendEventObject(s.obj[:0], e)
	attrs := make([]attribute.KeyValue, 0, len(s.obj))
	for _, f := range s.obj {
		attrs = append(attrs, attributeOf(f))
	}
	r.AddAttributes(attrs...)
	s.logger.Emit(context.Background(), r)
	s.emitted.Add(1)
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

// Stats is what became of the events written.
type Stats struct {
	Emitted, Sent, Failed, Dropped uint64
	LastError                      error
}

// Close sends what is queued (waiting at most until ctx ends) and says
// what became of every event.
func (s *Sink) Close(ctx context.Context) Stats {
	_ = s.provider.Shutdown(ctx) // flushes; its errors are counted below
	st := Stats{Emitted: s.emitted.Load(), Sent: s.counting.sent.Load(), Failed: s.counting.failed.Load()}
	if v := s.counting.lastErr.Load(); v != nil {
		st.LastError = *v
	}
	if n := st.Sent + st.Failed; st.Emitted > n {
		st.Dropped = st.Emitted - n // never handed to the exporter: the queue's
	}
	return st
}

// Summary is the line the CLI prints at the end.
func (st Stats) Summary(endpoint string) string {
	s := fmt.Sprintf("otlp: %d events sent to %s", st.Sent, endpoint)
	if st.Failed > 0 || st.Dropped > 0 {
		s += fmt.Sprintf(", %d refused or unsent, %d dropped by the queue", st.Failed, st.Dropped)
		if st.LastError != nil {
			s += " (last error: " + st.LastError.Error() + ")"
		}
	}
	return s
}

// Endpoint is where the sink sends.
func (s *Sink) Endpoint() string { return s.endpoint }

// countingExporter counts the records of each export by its outcome.
type countingExporter struct {
	sdklog.Exporter
	sent, failed atomic.Uint64
	lastErr      atomic.Pointer[error]
}

func (c *countingExporter) Export(ctx context.Context, rs []sdklog.Record) error {
	err := c.Exporter.Export(ctx, rs)
	if err != nil {
		c.failed.Add(uint64(len(rs)))
		c.lastErr.Store(&err)
	} else {
		c.sent.Add(uint64(len(rs)))
	}
	return err
}
