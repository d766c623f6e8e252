package exporter

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
)

// connGuard bounds the connections one listener holds without letting
// anyone hold them all. At the cap, a new connection is served by closing
// the connection that has been idle longest (one not in a request's
// handler: idle between requests, or still sending its request), so
// connections kept open by a local user cannot keep a scrape or a probe
// out. A connection also lives a bounded time and number of requests:
// past either, its next answer says "Connection: close". Only when every
// connection is inside a handler does a new one wait, and that is logged.
type connGuard struct {
	name        string // the listener, in the log and the metrics' label
	max         int
	maxAge      time.Duration
	maxRequests int
	log         *ratelog.Logger
	now         func() time.Time

	mu      sync.Mutex
	conns   map[*guardedConn]struct{}
	changed chan struct{} // a connection closed or left a handler
	shed    atomic.Uint64
}

func newConnGuard(name string, max int, maxAge time.Duration, maxRequests int, log *ratelog.Logger) *connGuard {
	return &connGuard{name: name, max: max, maxAge: maxAge, maxRequests: maxRequests, log: log, now: time.Now,
		conns: map[*guardedConn]struct{}{}, changed: make(chan struct{}, 1)}
}

// guardedConn is an accepted connection the guard counts.
type guardedConn struct {
	net.Conn
	g        *connGuard
	accepted time.Time
	// Under g.mu: when its last request ended (or it was accepted), how
	// many of its requests are in a handler now, how many it made, and
	// whether it is closed.
	last     time.Time
	busy     int
	requests int
	closed   bool
}

func (c *guardedConn) Close() error {
	c.g.forget(c)
	return c.Conn.Close()
}

// listener admits ln's connections through the guard.
func (g *connGuard) listener(ln net.Listener) net.Listener {
	return &guardedListener{Listener: ln, g: g}
}

type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.g.admit(c), nil
}

// saturatedEvery is how often a wait for a free connection is logged.
var saturatedEvery = 10 * time.Second

// admit makes room for c (shedding the connection idle longest, or
// waiting while every one is in a handler) and counts it.
func (g *connGuard) admit(c net.Conn) net.Conn {
	var waiting time.Time
	g.mu.Lock()
	for len(g.conns) >= g.max {
		if v := g.idlest(); v != nil {
			v.closed = true
			delete(g.conns, v)
			n := g.shed.Add(1)
			idle := g.now().Sub(v.last).Round(time.Millisecond)
			g.mu.Unlock()
			_ = v.Conn.Close() // the server's read on it fails: it lets it go
			g.log.Printf("shed "+g.name, "%s: %d connections open, the most allowed: closed the one idle longest (from %s, idle %s) to serve a new one; %d closed so far (rdmatrace_http_connections_shed_total)",
				g.name, g.max, peer(v), idle, n)
			g.mu.Lock()
			continue
		}
		if waiting.IsZero() {
			waiting = g.now()
		}
		g.mu.Unlock()
		select {
		case <-g.changed:
		case <-time.After(saturatedEvery):
			g.log.Printf("saturated "+g.name, "%s: all %d connections have been in a request for %s: new connections wait in the listen queue",
				g.name, g.max, g.now().Sub(waiting).Round(time.Second))
		}
		g.mu.Lock()
	}
	now := g.now()
	gc := &guardedConn{Conn: c, g: g, accepted: now, last: now}
	g.conns[gc] = struct{}{}
	g.mu.Unlock()
	return gc
}

// idlest is the open connection not in a handler that has been idle
// longest, nil when all are in one. Called with g.mu held.
func (g *connGuard) idlest() *guardedConn {
	var v *guardedConn
	for c := range g.conns {
		if c.busy == 0 && (v == nil || c.last.Before(v.last)) {
			v = c
		}
	}
	return v
}

func (g *connGuard) forget(c *guardedConn) {
	g.mu.Lock()
	if !c.closed {
		c.closed = true
		delete(g.conns, c)
	}
	g.mu.Unlock()
	g.notify()
}

func (g *connGuard) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

func peer(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	return "a local socket"
}

// connKey finds a request's connection in its context.
type connKey struct{ g *connGuard }

// connContext is http.Server.ConnContext: it remembers the guarded
// connection under the request (through TLS, the one beneath it).
func (g *connGuard) connContext(ctx context.Context, c net.Conn) context.Context {
	if u, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = u.NetConn()
	}
	if gc, ok := c.(*guardedConn); ok {
		return context.WithValue(ctx, connKey{g}, gc)
	}
	return ctx
}

// handler marks a connection busy while next serves its request, and asks
// the client to close it once it is past its age or request count.
func (g *connGuard) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gc, _ := r.Context().Value(connKey{g}).(*guardedConn)
		if gc == nil {
			next.ServeHTTP(w, r)
			return
		}
		g.mu.Lock()
		gc.busy++
		gc.requests++
		last := gc.requests >= g.maxRequests || g.now().Sub(gc.accepted) >= g.maxAge
		g.mu.Unlock()
		if last {
			w.Header().Set("Connection", "close")
		}
		defer func() {
			g.mu.Lock()
			gc.busy--
			gc.last = g.now()
			g.mu.Unlock()
			g.notify()
		}()
		next.ServeHTTP(w, r)
	})
}

// open counts the connections held now.
func (g *connGuard) open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

var (
	connsDesc = prometheus.NewDesc("rdmatrace_http_connections",
		"Connections the exporter holds open now, by listener (metrics: --listen; probes: --web.probe-listen).", []string{"listener"}, nil)
	shedDesc = prometheus.NewDesc("rdmatrace_http_connections_shed_total",
		"Connections closed to make room for a new one at --web.max-connections: the one idle longest each time.", []string{"listener"}, nil)
)

// guardMetrics serves the guards' counts.
type guardMetrics struct {
	mu     sync.Mutex
	guards []*connGuard
}

func (m *guardMetrics) add(g *connGuard) { m.mu.Lock(); m.guards = append(m.guards, g); m.mu.Unlock() }

func (m *guardMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- connsDesc; ch <- shedDesc }

func (m *guardMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.guards {
		ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(g.open()), g.name)
		ch <- prometheus.MustNewConstMetric(shedDesc, prometheus.CounterValue, float64(g.shed.Load()), g.name)
	}
}
