package exporter

import (
	"context"
	"errors"
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

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// The serving limits' defaults. A Prometheus server scrapes a target with
// one connection at a time; these leave room for a few servers and people,
// and bound what anyone else can make the exporter hold: at about 25 kB an
// accepted connection, MaxConnections idle ones cost under 2 MB. At the
// cap, the connection idle longest is closed for a new one.
const (
	DefaultMaxConnections = 64
	// DefaultMaxRequests is lower than node_exporter's 40: each scrape in
	// flight holds a netlink socket and its counts.
	DefaultMaxRequests = 10
	// DefaultTimeout is a scrape's longest, past Prometheus' default
	// scrape_timeout (10 s) and past what 10 000 objects take under an
	// emulator (about 1.5 s).
	DefaultTimeout           = 30 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	// A connection's life: past either, its next answer closes it, so
	// that nobody keeps a connection by using it (a Prometheus server
	// scraping every 15 s opens one a minute).
	DefaultMaxConnAge      = time.Minute
	DefaultMaxConnRequests = 100
	// DefaultMaxProbeConnections bounds the probe listener: the kubelet
	// opens one connection per probe.
	DefaultMaxProbeConnections = 8
)

// ServeOptions bound what the server holds; the zero value of a field is
// its default.
type ServeOptions struct {
	// MaxConnections is how many connections are held at once; at the cap,
	// the one idle longest is closed to serve a new one (a new one waits
	// only while every one is inside a request).
	MaxConnections int
	// MaxRequests is how many scrapes run at once; the others are answered
	// 503 at once.
	MaxRequests int
	// Timeout is a scrape's longest: then 503, and the scrape's read of
	// the kernel is cancelled. The write deadline is 10 s past it, so that
	// the answer can still be written.
	Timeout time.Duration
	// ReadHeaderTimeout bounds a request's headers (and a TLS handshake):
	// a connection that says nothing is closed after it.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle between scrapes.
	IdleTimeout time.Duration
	// MaxConnAge and MaxConnRequests bound a connection's life: past
	// either, the next answer on it says "Connection: close".
	MaxConnAge      time.Duration
	MaxConnRequests int
	// MaxProbeConnections bounds ServeProbes' listener as MaxConnections
	// bounds Serve's.
	MaxProbeConnections int
	// WebConfigFile is the exporter-toolkit web configuration (TLS, basic
	// auth), as node_exporter's --web.config.file; "" serves plain HTTP.
	WebConfigFile string
	// Log takes net/http's, promhttp's and the toolkit's errors and the
	// connections shed (nil: stderr, one line per kind every 10 s).
	Log *ratelog.Logger
	// Ready answers /readyz: nil when the exporter has started what it
	// can (nil Ready: always ready).
	Ready func() error
	// Gather gives the metrics of one scrape, read until ctx ends (the
	// scrape's timeout or its client's going); nil: the registry's.
	Gather func(ctx context.Context) prometheus.Gatherer
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
	if o.MaxConnAge <= 0 {
		o.MaxConnAge = DefaultMaxConnAge
	}
	if o.MaxConnRequests <= 0 {
		o.MaxConnRequests = DefaultMaxConnRequests
	}
	if o.MaxProbeConnections <= 0 {
		o.MaxProbeConnections = DefaultMaxProbeConnections
	}
	if o.Log == nil {
		o.Log = ratelog.New(os.Stderr, 10*time.Second)
	}
}

// Server serves /metrics with the bounds of its ServeOptions, and the
// probes (/healthz, /readyz) there and on a listener of their own.
type Server struct {
	opts          ServeOptions
	http, probes  *http.Server
	guard, pguard *connGuard
}

// NewServer serves what the scrape gathers (ServeOptions.Gather, else
// reg) on /metrics, /healthz and /readyz; reg gets promhttp's and the
// connections' own metrics.
func NewServer(reg *prometheus.Registry, o ServeOptions) *Server {
	o.defaults()
	s := &Server{opts: o}
	s.guard = newConnGuard("metrics", o.MaxConnections, o.MaxConnAge, o.MaxConnRequests, o.Log)
	s.pguard = newConnGuard("probes", o.MaxProbeConnections, o.MaxConnAge, o.MaxConnRequests, o.Log)
	gm := &guardMetrics{}
	gm.add(s.guard)
	gm.add(s.pguard)
	_ = reg.Register(gm) // once per registry: a second server shares the first's series
	mux := http.NewServeMux()
	s.probeRoutes(mux)
	gather := o.Gather
	if gather == nil {
		gather = func(context.Context) prometheus.Gatherer { return reg }
	}
	mux.Handle("/metrics", scrapeHandler(reg, gather, o))
	mux.HandleFunc("GET /{$}", landingPage)
	s.http = s.newHTTP(s.guard, mux)
	pmux := http.NewServeMux()
	s.probeRoutes(pmux)
	s.probes = s.newHTTP(s.pguard, pmux)
	s.probes.WriteTimeout = 10 * time.Second
	return s
}

func (s *Server) newHTTP(g *connGuard, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           g.handler(h),
		ConnContext:       g.connContext,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		ReadTimeout:       s.opts.ReadHeaderTimeout + 5*time.Second, // a GET has no body
		WriteTimeout:      s.opts.Timeout + 10*time.Second,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          s.opts.Log.StdLogger(""), // its lines begin "http: "
	}
}

// probeRoutes are /healthz and /readyz, which read nothing of the kernel.
func (s *Server) probeRoutes(mux *http.ServeMux) {
	// A liveness probe must be cheap and say only that the process serves:
	// /metrics reads the kernel, and a node without RDMA is not a reason
	// to restart the exporter.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if s.opts.Ready != nil {
			if err := s.opts.Ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, "not ready: "+termsafe.Sanitize(err.Error())+"\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
}

// landingPage answers / as exporters do (exporter-toolkit's landing
// page): what this is and where its metrics and probes are, so that a
// browser or a curl pointed at the port learns it serves, instead of a
// 404. It reads nothing of the kernel.
func landingPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, landingHTML)
}

const landingHTML = `<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>rdmatrace exporter</title></head>
<body>
<h1>rdmatrace exporter</h1>
<p>RDMA objects by owner, failures and port counters of this node, for Prometheus.</p>
<ul>
<li><a href="metrics">/metrics</a>: the metrics</li>
<li><a href="healthz">/healthz</a>: liveness (the process serves)</li>
<li><a href="readyz">/readyz</a>: readiness (the first read of the kernel is done)</li>
</ul>
</body>
</html>
`

// scrapeHandler serves /metrics: at most MaxRequests at once (503 at once
// past it), each answered 503 after Timeout, when its context is
// cancelled and so is its read of the kernel.
func scrapeHandler(reg *prometheus.Registry, gather func(context.Context) prometheus.Gatherer, o ServeOptions) http.Handler {
	errLog := o.Log.StdLogger("metrics: ")
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		promhttp.HandlerFor(gather(r.Context()), promhttp.HandlerOpts{Registry: reg, ErrorLog: errLog}).ServeHTTP(w, r)
	})
	sem := make(chan struct{}, o.MaxRequests)
	timed := http.TimeoutHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { <-sem }() // when the scrape has ended, not at its 503
		inner.ServeHTTP(w, r)
	}), o.Timeout, fmt.Sprintf("Exceeded configured timeout of %v.\n", o.Timeout))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", o.MaxRequests), http.StatusServiceUnavailable)
			return
		}
		timed.ServeHTTP(w, r)
	})
}

// CheckWebConfig reads and checks a web configuration file as Serve will.
func CheckWebConfig(path string) error {
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return nil
}

// Serve serves ln (with TLS and basic auth when the web configuration
// says so), holding at most MaxConnections of its connections. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	ln = s.guard.listener(ln)
	if s.opts.WebConfigFile == "" {
		return s.http.Serve(ln)
	}
	path := s.opts.WebConfigFile
	return web.Serve(ln, s.http, &web.FlagConfig{WebConfigFile: &path}, slog.New(&slogHandler{log: s.opts.Log}))
}

// ServeProbes serves /healthz and /readyz alone on ln, in plain HTTP,
// holding at most MaxProbeConnections: the probes' own way in, which a
// flood of the metrics listener does not reach. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) ServeProbes(ln net.Listener) error {
	return s.probes.Serve(s.pguard.listener(ln))
}

// Shutdown stops accepting and waits for the requests under way until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return errors.Join(s.http.Shutdown(ctx), s.probes.Shutdown(ctx))
}

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
