package exporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// /healthz is the liveness probe's: it answers without reading the kernel
// (a scrape of a big node takes seconds under load), and on a node whose
// kernel cannot be read at all.
func TestHealthzAnswersWithoutReadingTheKernel(t *testing.T) {
	var reads atomic.Int32
	source := func(context.Context, func(*rdma.Resource)) rdma.NodeState {
		reads.Add(1)
		return rdma.NodeState{Errors: []error{&rdma.PartError{Part: rdma.PartNetlink, Err: errors.New("socket: protocol not supported")}}}
	}
	_, addr := serve(t, ServeOptions{}, source, nil)
	for range 3 {
		if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
			t.Errorf("/healthz: %d %q, want 200 \"ok\\n\"", code, body)
		}
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("/healthz read the kernel %d times, want none", n)
	}
	if code, body := httpGet(t, "http://"+addr+"/metrics"); code != 200 || !strings.Contains(body, `rdmatrace_part_up{part="netlink"} 0`) {
		t.Errorf("/metrics with no RDMA netlink: %d, want 200 with part_up{netlink} 0:\n%.2000s", code, body)
	}
}

// /readyz says not ready, with why, until the exporter has tried what it
// can start; /healthz is 200 all along.
func TestReadyzSaysWhyUntilReady(t *testing.T) {
	var ready atomic.Bool
	_, addr := serve(t, ServeOptions{Ready: func() error {
		if !ready.Load() {
			return errors.New("the tracer's first start is under way\x1b[2J")
		}
		return nil
	}}, nil, nil)
	code, body := httpGet(t, "http://"+addr+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: the tracer's first start is under way") || strings.Contains(body, "\x1b") {
		t.Errorf("/readyz before: %d %q, want 503 and why, sanitized", code, body)
	}
	if code, _ := httpGet(t, "http://"+addr+"/healthz"); code != 200 {
		t.Errorf("/healthz while not ready: %d, want 200", code)
	}
	ready.Store(true)
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("/readyz after: %d %q, want 200 ok", code, body)
	}
}

// build_info and part_up: the exporter says what it is and which of its
// parts work, netlink's from the scrape itself.
func TestBuildInfoAndPartsUp(t *testing.T) {
	netlinkDown := false
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState {
		if netlinkDown {
			return rdma.NodeState{Errors: []error{&rdma.PartError{Part: rdma.PartNetlink, Err: errors.New("no RDMA netlink")}}}
		}
		return snapshot()
	}, 2)
	h := NewHealth("0.9.0", "0123abc", PartTracer)
	x.SetHealth(h)
	x.LogTo(ratelog.New(io.Discard, time.Minute))
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	check := func(netlink, tracer string) {
		t.Helper()
		want := `
# HELP rdmatrace_part_up ` + partUpHelp + `
# TYPE rdmatrace_part_up gauge
rdmatrace_part_up{part="netlink"} ` + netlink + `
rdmatrace_part_up{part="tracer"} ` + tracer + `
`
		if err := testutil.GatherAndCompare(gatherer(x, reg), strings.NewReader(want), "rdmatrace_part_up"); err != nil {
			t.Error(err)
		}
	}
	check("1", "0")
	h.Set(PartTracer, true)
	check("1", "1")
	netlinkDown = true
	check("0", "1")
	mfs, err := gatherer(x, reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "rdmatrace_build_info" {
			continue
		}
		ls := map[string]string{}
		for _, l := range mf.Metric[0].Label {
			ls[l.GetName()] = l.GetValue()
		}
		found = ls["version"] == "0.9.0" && ls["revision"] == "0123abc" && strings.HasPrefix(ls["goversion"], "go") &&
			mf.Metric[0].GetGauge().GetValue() == 1
		if !found {
			t.Errorf("rdmatrace_build_info: %v", mf)
		}
	}
	if !found {
		t.Error("no rdmatrace_build_info")
	}
}

// fakePart is a part for Retry: it fails with the errors given, in turn,
// then runs until stopped.
type fakePart struct {
	mu     sync.Mutex
	errs   []error
	starts int
	stops  chan struct{}
}

func (p *fakePart) start(context.Context) (func() error, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	if len(p.errs) > 0 {
		err := p.errs[0]
		p.errs = p.errs[1:]
		return nil, nil, err
	}
	stop := make(chan struct{})
	var once sync.Once
	return func() error { <-stop; return nil }, func() { once.Do(func() { close(stop) }) }, nil
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.l = append(l.l, s); l.mu.Unlock() }
func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A part that cannot start is retried on a backoff, its failure logged
// once per reason (not once per try), its start after failing once; the
// exporter is ready after the first try, whatever its outcome.
func TestRetryLogsEachChangeOnce(t *testing.T) {
	p := &fakePart{errs: []error{
		errors.New("the RDMA stack is not loaded (no ib_core)"),
		errors.New("the RDMA stack is not loaded (no ib_core)"),
		errors.New("the RDMA stack is not loaded (no ib_core)"),
		errors.New("load: program 12: permission denied"),
		errors.New("load: program 13: permission denied"), // the same reason
	}}
	h := NewHealth("", "", PartTracer)
	var log lines
	var attempted atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	r := &Retry{Part: PartTracer, Health: h, Start: p.start, Min: time.Millisecond, Max: 4 * time.Millisecond,
		Log: log.add, Attempted: func() { attempted.Add(1) }}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	waitUntil(t, "the part to start", func() bool { return h.Up(PartTracer) })
	cancel()
	<-done
	want := []string{
		"tracer cannot start: the RDMA stack is not loaded (no ib_core); serving without it, trying again (logged again when this changes)",
		"tracer cannot start: load: program 12: permission denied; serving without it, trying again (logged again when this changes)",
		"tracer started",
	}
	if got := log.get(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.starts != 6 || attempted.Load() != 1 || h.Up(PartTracer) {
		t.Errorf("%d starts, ready told %d times, up %v after the end; want 6, 1, false", p.starts, attempted.Load(), h.Up(PartTracer))
	}
}

// What the start depends on changing (a module loaded) ends a long
// backoff at once, and restarts a part that runs (for the hooks it could
// not attach before).
func TestRetryFollowsTheProbe(t *testing.T) {
	p := &fakePart{errs: []error{errors.New("no ib_core")}}
	var state atomic.Value
	state.Store("no ib_core")
	h := NewHealth("", "", PartTracer)
	var log lines
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &Retry{Part: PartTracer, Health: h, Start: p.start, Min: time.Hour, Max: time.Hour,
		Probe: func() string { return state.Load().(string) }, ProbeEvery: time.Millisecond, Log: log.add}
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	waitUntil(t, "the first failure", func() bool { return len(log.get()) == 1 })
	state.Store("rdma_cm is not loaded")
	waitUntil(t, "the start after the probe changed", func() bool { return h.Up(PartTracer) })
	state.Store("")
	waitUntil(t, "the restart", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.starts == 3 })
	waitUntil(t, "the part up again", func() bool { return h.Up(PartTracer) })
	cancel()
	<-done
	if got := log.get(); len(got) != 3 || got[1] != "tracer started" || !strings.Contains(got[2], "restarting") {
		t.Errorf("log: %q", got)
	}
}
