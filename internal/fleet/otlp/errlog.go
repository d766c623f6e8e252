package otlp

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
)

// The OpenTelemetry SDK reports a failed export through its global error
// handler and its warnings (records dropped by the queue) through its
// global logr logger; by default both print raw lines on stderr
// ("2026/11/26 05:00:00 failed to upload logs: ...") at every batch.
// installLog routes both through rdmatrace's log: "rdmatrace: otlp: ...",
// sanitized, one line per kind every 10 s. The errors are also counted
// and summed up at Close.
var (
	sdkLog      atomic.Pointer[ratelog.Logger]
	installOnce sync.Once
)

// installLog makes l (nil: stderr) the log of the SDK's errors and
// warnings, for every Sink (the SDK's handler and logger are global).
func installLog(l *ratelog.Logger) {
	if l == nil {
		l = ratelog.New(os.Stderr, 10*time.Second)
		if !sdkLog.CompareAndSwap(nil, l) {
			return // keep the one a caller chose
		}
	} else {
		sdkLog.Store(l)
	}
	installOnce.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			msg := "otlp: " + err.Error()
			sdkLog.Load().Log(ratelog.Kind(msg), msg)
		}))
		otel.SetLogger(logr.New(logSink{}))
	})
}

// logSink is the SDK's logr logger: errors and warnings (V(1)) as
// rdmatrace's lines; its info (V(4)) and debug (V(8)) not at all, as the
// SDK's default logger.
type logSink struct{ kv []any }

func (logSink) Init(logr.RuntimeInfo)          {}
func (logSink) Enabled(level int) bool         { return level <= 1 }
func (s logSink) WithName(string) logr.LogSink { return s }

func (s logSink) WithValues(kv ...any) logr.LogSink {
	return logSink{kv: append(s.kv[:len(s.kv):len(s.kv)], kv...)}
}

func (s logSink) Info(_ int, msg string, kv ...any) { s.log(nil, msg, kv) }

func (s logSink) Error(err error, msg string, kv ...any) { s.log(err, msg, kv) }

func (s logSink) log(err error, msg string, kv []any) {
	var b strings.Builder
	b.WriteString("otlp: ")
	b.WriteString(msg)
	if err != nil {
		if msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(err.Error())
	}
	all := append(s.kv[:len(s.kv):len(s.kv)], kv...)
	for i := 0; i+1 < len(all) && b.Len() < ratelog.MaxLine; i += 2 {
		fmt.Fprintf(&b, " %v=%v", all[i], all[i+1])
	}
	if l := sdkLog.Load(); l != nil {
		l.Log("otlp: "+msg, b.String())
	}
}
