package exporter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// The serving limits' defaults. A Prometheus server scrapes a target with
// one connection at a time; these leave room for a few servers and people,
// and bound what anyone else can make the exporter hold: at about 25 kB an
// accepted connection, MaxConnections idle ones cost under 2 MB.
const (
	DefaultMaxConnections = 64
	// DefaultMaxRequests is lower than node_exporter's 40: each scrape in
	// flight holds its whole netlink dump.
	DefaultMaxRequests = 10
	// DefaultTimeout is a scrape's longest, past Prometheus' default
	// scrape_timeout (10 s) and past what 10 000 objects take under an
	// emulator (about 1.5 s).
	DefaultTimeout           = 30 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
)

// ServeOptions bound what the server holds; the zero value of a field is
// its default.
type ServeOptions struct {
	// MaxConnections is how many connections are accepted at once; the
	// others wait in the kernel's listen queue.
	MaxConnections int
	// MaxRequests is how many scrapes run at once; the others are answered
	// 503 at once.
	MaxRequests int
	// Timeout is a scrape's longest: then 503. The write deadline is 10 s
	// past it, so that the answer can still be written.
	Timeout time.Duration
	// ReadHeaderTimeout bounds a request's headers (and a TLS handshake):
	// a connection that says nothing is closed after it.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle between scrapes.
	IdleTimeout time.Duration
	// WebConfigFile is the exporter-toolkit web configuration (TLS, basic
	// auth), as node_exporter's --web.config.file; "" serves plain HTTP.
	WebConfigFile string
	// Log takes net/http's, promhttp's and the toolkit's errors (nil:
	// stderr, one line per kind every 10 s).
	Log *ratelog.Logger
	// Ready answers /readyz: nil when the exporter has started what it
	// can (nil Ready: always ready).
	Ready func() error
}

func (o *ServeOptions) defaults() {
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Log == nil {
		o.Log = ratelog.New(os.Stderr, 10*time.Second)
	}
}

// Server serves /metrics with the bounds of its ServeOptions.
type Server struct {
	http *http.Server
	opts ServeOptions
}

// NewServer serves what reg gathers on /metrics (and promhttp's own
// handler metrics, registered in reg), /healthz and /readyz.
func NewServer(reg *prometheus.Registry, o ServeOptions) *Server {
	o.defaults()
	mux := http.NewServeMux()
	// A liveness probe must be cheap and say only that the process serves:
	// /metrics reads the kernel, and a node without RDMA is not a reason
	// to restart the exporter.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, "not ready: "+termsafe.Sanitize(err.Error())+"\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:            reg,
		ErrorLog:            o.Log.StdLogger("metrics: "),
		MaxRequestsInFlight: o.MaxRequests,
		Timeout:             o.Timeout,
	}))
	return &Server{opts: o, http: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadHeaderTimeout + 5*time.Second, // a GET has no body
		WriteTimeout:      o.Timeout + 10*time.Second,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          o.Log.StdLogger(""), // its lines begin "http: "
	}}
}

// CheckWebConfig reads and checks a web configuration file as Serve will.
func CheckWebConfig(path string) error {
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return nil
}

// Serve accepts at most MaxConnections of ln's connections at once, with
// TLS and basic auth when the web configuration says so. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	ln = netutil.LimitListener(ln, s.opts.MaxConnections)
	if s.opts.WebConfigFile == "" {
		return s.http.Serve(ln)
	}
	path := s.opts.WebConfigFile
	return web.Serve(ln, s.http, &web.FlagConfig{WebConfigFile: &path}, slog.New(&slogHandler{log: s.opts.Log}))
}

// Shutdown stops accepting and waits for the scrapes under way until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// slogHandler is the toolkit's logger as rdmatrace's lines: its warnings
// and errors (a configuration it cannot reread), not its notices that it
// listens.
type slogHandler struct {
	log   *ratelog.Logger
	attrs []slog.Attr
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("web: ")
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true }
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.log.Log("web: "+r.Message, b.String())
	return nil
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &slogHandler{log: h.log, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

func (h *slogHandler) WithGroup(string) slog.Handler { return h }
