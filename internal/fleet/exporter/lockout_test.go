package exporter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// holdSlots opens n keep-alive connections to addr, makes one request on
// each, and leaves them open and idle, as a local user holding the
// exporter's slots does; they are closed at the test's end.
func holdSlots(t *testing.T, network, addr string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("holder %d: %v", len(conns), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return conns
}

// getOn is one GET on a connection of its own, within 3 s.
func getOn(network, addr, path string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	if network == "unix" {
		path := addr
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}
		addr = "x"
	}
	c := &http.Client{Timeout: 3 * time.Second, Transport: tr}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// 64 idle keep-alive connections (the default cap) held by one user do
// not keep a fresh probe or scrape out: the one idle longest is closed
// for it, counted, and logged once.
func TestHeldConnectionsDoNotLockOutProbesOrScrapes(t *testing.T) {
	log := &syncBuffer{}
	s, addr := serve(t, ServeOptions{Log: ratelog.New(log, time.Minute)}, nil, nil)
	holdSlots(t, "tcp", addr, DefaultMaxConnections)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/healthz"} {
		start := time.Now()
		code, body, err := getOn("tcp", addr, path)
		if err != nil || code != 200 {
			t.Fatalf("%s beside %d held connections: %d %v %.100q", path, DefaultMaxConnections, code, err, body)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s took %v", path, d)
		}
	}
	if n := s.guard.shed.Load(); n < 1 {
		t.Errorf("%d connections shed, want the held ones to make room", n)
	}
	l := log.String()
	if strings.Count(l, "\n") != 1 || !strings.Contains(l, "metrics: 64 connections open, the most allowed: closed the one idle longest (from 127.0.0.1:") {
		t.Errorf("log: %q, want one line about the shedding", l)
	}
}

// The shed connections are counted in rdmatrace_http_connections_shed_total.
func TestShedConnectionsAreCounted(t *testing.T) {
	reg, addr := serveRegistry(t, ServeOptions{MaxConnections: 3, Log: ratelog.New(io.Discard, time.Minute)})
	holdSlots(t, "tcp", addr, 3)
	// Five more kept open: each sheds the one idle longest (the three
	// held, then the first two of these).
	for range 5 {
		holdSlots(t, "tcp", addr, 1)
	}
	// Then one for the scrape that reads the count.
	code, body, err := getOn("tcp", addr, "/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	if !strings.Contains(body, `rdmatrace_http_connections_shed_total{listener="metrics"} 6`) {
		t.Errorf("metrics lack 6 shed connections:\n%s", grepLines(body, "rdmatrace_http_"))
	}
	if n := testutil.CollectAndCount(reg, "rdmatrace_http_connections"); n != 2 {
		t.Errorf("rdmatrace_http_connections: %d series, want one per listener", n)
	}
}

// A connection used again and again is closed after MaxConnRequests
// requests: the answer says "Connection: close" and the server closes it.
func TestAConnectionsLifeIsBounded(t *testing.T) {
	_, addr := serve(t, ServeOptions{MaxConnRequests: 3, MaxConnAge: time.Hour, Log: ratelog.New(io.Discard, time.Minute)}, nil, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if got := resp.Close; got != (i == 3) {
			t.Errorf("request %d: Connection: close %v", i, got)
		}
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last request: %v, want the server to close", err)
	}
	// And by age.
	_, addr = serve(t, ServeOptions{MaxConnAge: time.Nanosecond, Log: ratelog.New(io.Discard, time.Minute)}, nil, nil)
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil || !resp.Close {
		t.Errorf("a connection past its age: %v %v, want Connection: close", resp, err)
	}
}

// While every metrics connection is inside a scrape, a new one waits
// (logged), and the probe listener still answers.
func TestProbesHaveTheirOwnWayIn(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int64
	source := func(ctx context.Context, _ func(*rdma.Resource)) rdma.NodeState {
		entered.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return snapshot()
	}
	defer close(release)
	old := saturatedEvery
	saturatedEvery = 200 * time.Millisecond
	defer func() { saturatedEvery = old }()
	log := &syncBuffer{}
	s, addr := serve(t, ServeOptions{MaxConnections: 2, MaxRequests: 2, Log: ratelog.New(log, time.Minute)}, source, nil)
	probes := filepath.Join(t.TempDir(), "probes.sock")
	pln, err := Listen("unix:" + probes)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.ServeProbes(pln) }()
	for range 2 { // scrapes that hold their connections until released
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	for entered.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	if code, _, err := getOn("tcp", addr, "/healthz"); err == nil {
		t.Logf("%d", code)
		t.Error("/healthz on the metrics listener answered while both its connections were in a scrape")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body, err := getOn("unix", probes, path); err != nil || code != 200 || body != "ok\n" {
			t.Errorf("%s on the probe listener: %d %q %v", path, code, body, err)
		}
	}
	if code, _, err := getOn("unix", probes, "/metrics"); err != nil || code != 404 {
		t.Errorf("/metrics on the probe listener: %d %v, want 404", code, err)
	}
	if l := log.String(); !strings.Contains(l, "metrics: all 2 connections have been in a request for") {
		t.Errorf("log: %q, want the saturation said", l)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
