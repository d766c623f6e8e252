package exporter

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// syncBuffer is a log destination the server's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// serve starts a Server of the fixed snapshot on a loopback port; it is
// shut down at the test's end.
func serve(t *testing.T, o ServeOptions, source Source, wrap func(net.Listener) net.Listener) (*Server, string) {
	t.Helper()
	s, _, addr := serveWith(t, o, source, wrap)
	return s, addr
}

// serveRegistry is serve of the fixed snapshot, with its registry.
func serveRegistry(t *testing.T, o ServeOptions) (*prometheus.Registry, string) {
	t.Helper()
	_, reg, addr := serveWith(t, o, nil, nil)
	return reg, addr
}

func serveWith(t *testing.T, o ServeOptions, source Source, wrap func(net.Listener) net.Listener) (*Server, *prometheus.Registry, string) {
	t.Helper()
	if source == nil {
		source = fixed(snapshot())
	}
	x := New(source, 2)
	x.LogTo(o.Log)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	o.Gather = x.Gatherer(reg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	s := NewServer(reg, o)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, reg, addr
}

// scrape is one GET /metrics on a connection of its own.
func scrape(t *testing.T, addr string) (int, string) {
	t.Helper()
	code, body, err := tryScrape(addr)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return code, body
}

func tryScrape(addr string) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// countingListener calls accepted for each connection it gives and closed
// once when that connection is closed.
type countingListener struct {
	net.Listener
	accepted, closed func()
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted()
	return &countingConn{Conn: c, closed: l.closed}, nil
}

type countingConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *countingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.closed)
	return err
}

// A flood of connections that say nothing, or that stay open between
// requests, gets at most MaxConnections held at once (the one idle
// longest closed for a newcomer), each closed after ReadHeaderTimeout or
// IdleTimeout if not before; then a scrape is served.
func TestIdleConnectionsAreCappedAndClosed(t *testing.T) {
	const limit, flood = 4, 24
	// Counted below the cap's listener: a connection is closed there before
	// the cap lets the next one in (http.Server's StateClosed hook runs
	// after that, so counting with it sees one too many for a moment).
	var open, most, accepted atomic.Int64
	log := &syncBuffer{}
	_, addr := serve(t, ServeOptions{MaxConnections: limit, ReadHeaderTimeout: 200 * time.Millisecond,
		IdleTimeout: 200 * time.Millisecond, Log: ratelog.New(log, time.Second)}, nil, func(ln net.Listener) net.Listener {
		return countingListener{ln, func() {
			accepted.Add(1)
			n := open.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}, func() { open.Add(-1) }}
	})
	// A keep-alive connection that made one request and then idles.
	ka, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	fmt.Fprintf(ka, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(ka), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("keep-alive scrape: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	// Then connections that never send a byte.
	var conns []net.Conn
	for range flood {
		c, err := net.Dial("tcp", addr) // the kernel's listen queue takes them
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Every connection, the keep-alive one too, is closed by the server.
	deadline := time.Now().Add(15 * time.Second)
	for _, c := range append([]net.Conn{ka}, conns...) {
		_ = c.SetReadDeadline(deadline)
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("an idle connection: read %d bytes, %v; want the server to close it", n, err)
		}
	}
	// Counted before the guard sheds one for the newcomer: one over.
	if m := most.Load(); m > limit+1 {
		t.Errorf("%d connections accepted at once, want at most %d", m, limit+1)
	}
	if a := accepted.Load(); a != flood+1 {
		t.Errorf("%d connections accepted in all, want %d: each in turn", a, flood+1)
	}
	if code, body := scrape(t, addr); code != 200 || !strings.Contains(body, "rdma_resources{") {
		t.Errorf("after the flood: %d %.200s", code, body)
	}
	for l := range strings.Lines(log.String()) {
		if !strings.Contains(l, "metrics: 4 connections open, the most allowed: closed the one idle longest") {
			t.Errorf("log: %s, want only the shedding said", l)
		}
	}
}

// Scrapes past MaxRequests are refused at once with 503, and a scrape past
// Timeout is answered 503, not held.
func TestScrapesInFlightAreBounded(t *testing.T) {
	release := make(chan struct{})
	var entered atomic.Int64
	source := func(context.Context, func(*rdma.Resource)) rdma.NodeState {
		entered.Add(1)
		<-release
		return snapshot()
	}
	log := &syncBuffer{}
	_, addr := serve(t, ServeOptions{MaxRequests: 2, Timeout: 3 * time.Second, Log: ratelog.New(log, time.Second)}, source, nil)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	codes := make(chan int, 2)
	for range 2 {
		go func() { c, _, _ := tryScrape(addr); codes <- c }()
	}
	for entered.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if c, body := scrape(t, addr); c != http.StatusServiceUnavailable || !strings.Contains(body, "Limit of concurrent requests reached (2)") {
		t.Errorf("a third scrape: %d %.100q, want 503 at once", c, body)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the third scrape took %v: want 503 at once", d)
	}
	for range 2 {
		if c := <-codes; c != http.StatusServiceUnavailable {
			t.Errorf("a scrape past Timeout: %d, want 503", c)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the scrapes past Timeout took %v", d)
	}
	close(release)
}

// flakyListener fails its first n Accepts as a process at its fd limit
// does.
type flakyListener struct {
	net.Listener
	n atomic.Int64
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// net/http's "Accept error ... too many open files" goes to rdmatrace's
// log, one line per interval, not to stderr at each retry.
func TestHTTPErrorsGoToOurLogRateLimited(t *testing.T) {
	log := &syncBuffer{}
	_, addr := serve(t, ServeOptions{Log: ratelog.New(log, time.Minute)}, nil, func(ln net.Listener) net.Listener {
		f := &flakyListener{Listener: ln}
		f.n.Store(6) // retried after 5, 10, ... 160 ms
		return f
	})
	if code, _ := scrape(t, addr); code != 200 {
		t.Errorf("scrape after the accept errors: %d", code)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "rdmatrace: http: Accept error: accept tcp 127.0.0.1:") ||
		!strings.Contains(lines[0], "too many open files") {
		t.Errorf("log: %q, want one rdmatrace line for six accept errors", lines)
	}
}

// writeTLS writes a self-signed certificate for 127.0.0.1 and its key to dir.
func writeTLS(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rdmatrace test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// --web.config.file: TLS and basic auth as every Prometheus exporter has
// them (exporter-toolkit), the connection bounds still applied.
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pool := writeTLS(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"+
		"basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckWebConfig(cfg); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	_, addr := serve(t, ServeOptions{WebConfigFile: cfg, MaxConnections: 4, ReadHeaderTimeout: time.Second,
		Log: ratelog.New(log, time.Minute)}, nil, nil)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	get := func(user, pass string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET as %q: %v", user, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
	if code, _ := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	if code, body := get("prometheus", "s3cret"); code != 200 || !strings.Contains(body, "rdma_resources{") {
		t.Errorf("the right password: %d %.200s", code, body)
	}
	// Plain HTTP on the TLS port is refused; bytes that are not TLS at
	// all are a handshake error, logged once however many come.
	if code, _ := scrape(t, addr); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port: %d, want 400", code)
	}
	for range 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x1b[2J"))
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(log.String(), "first record does not look") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := log.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if n := strings.Count(out, "tls: first record does not look like a TLS handshake"); n != 1 || len(lines) > 3 {
		t.Errorf("log has %d lines, %d of the ten garbage connections: want that one once:\n%s", len(lines), n, out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "rdmatrace: http: TLS handshake error from 127.0.0.1:") {
			t.Errorf("log line %q: want rdmatrace's handshake errors only", l)
		}
	}
}

func TestBadWebConfigIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckWebConfig(cfg); err == nil || !strings.Contains(err.Error(), "--web.config.file "+cfg) {
		t.Errorf("a config naming missing files: %v", err)
	}
	if err := CheckWebConfig(filepath.Join(dir, "absent.yml")); err == nil {
		t.Error("an absent config: no error")
	}
}

// TestLandingPage: / answers with a page that links the metrics, as
// exporters do, and any other path is still 404.
func TestLandingPage(t *testing.T) {
	_, addr := serve(t, ServeOptions{}, func(context.Context, func(*rdma.Resource)) rdma.NodeState { return snapshot() }, nil)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, body := get("/"); c != http.StatusOK || !strings.Contains(body, `<a href="metrics">`) {
		t.Errorf("/: %d %.200q, want 200 with a link to the metrics", c, body)
	}
	if c, _ := get("/nothing"); c != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", c)
	}
}
