package exporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A scrape past Timeout is answered 503 and its read of the kernel is
// cancelled: the source sees its context end, and stops.
func TestATimedOutScrapeCancelsItsRead(t *testing.T) {
	cancelled := make(chan time.Duration, 1)
	source := func(ctx context.Context, _ func(*rdma.Resource)) rdma.NodeState {
		start := time.Now()
		select {
		case <-ctx.Done():
			cancelled <- time.Since(start)
		case <-time.After(20 * time.Second):
		}
		return rdma.NodeState{}
	}
	_, addr := serve(t, ServeOptions{Timeout: 300 * time.Millisecond, Log: ratelog.New(io.Discard, time.Minute)}, source, nil)
	if code, _ := scrape(t, addr); code != http.StatusServiceUnavailable {
		t.Errorf("a scrape past its timeout: %d, want 503", code)
	}
	select {
	case d := <-cancelled:
		if d > 5*time.Second {
			t.Errorf("the read was cancelled after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the scrape's read of the kernel was not cancelled")
	}
}

// blockingTracer is a tracer whose start or snapshot never ends by
// itself.
type blockingTracer struct{ stopped chan struct{} }

func (b *blockingTracer) Run(func(*rdma.Event) error) error            { <-b.stopped; return nil }
func (b *blockingTracer) Stop()                                        { close(b.stopped) }
func (b *blockingTracer) Close() error                                 { return nil }
func (b *blockingTracer) Health() (int, int, TracerCounts)             { return 1, 0, TracerCounts{} }
func emptySource(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }

// A SIGTERM (the context's end) while the tracer loads or while the
// start's snapshot reads a large inventory ends Run at once; so does one
// while it serves.
func TestRunEndsPromptlyAtAnyPointOfItsStart(t *testing.T) {
	for _, at := range []string{"load", "snapshot", "serving"} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			var reached atomic.Bool
			part := &TracerPart{
				Start: func() (Tracer, error) {
					if at == "load" {
						reached.Store(true)
						time.Sleep(time.Hour) // a load that never ends
					}
					return &blockingTracer{stopped: make(chan struct{})}, nil
				},
				Snapshot: func(ctx context.Context, emit func(*rdma.Event)) error {
					if at == "snapshot" {
						reached.Store(true)
						<-ctx.Done()
						return ctx.Err()
					}
					reached.Store(true)
					return nil
				},
			}
			ctx, cancel := context.WithCancel(context.Background())
			stderr := &syncBuffer{}
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, Options{Listen: "unix:" + filepath.Join(dir, "m.sock"), Source: emptySource, Tracer: part,
					Ready: readyFile(filepath.Join(dir, "ready")), Stderr: stderr})
			}()
			for !reached.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			if at == "serving" {
				for {
					if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("Run ended %v after the signal", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run still running 10 s after the signal")
			}
		})
	}
}

// --listen unix:PATH makes a socket only its owner can connect to, and
// replaces a socket left behind, nothing else.
func TestListenUnixIsOwnersOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.sock")
	ln, err := Listen("unix:" + path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("socket mode %v, want 0600", m)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close()
	ln, err = Listen("unix:" + path) // the one left behind
	if err != nil {
		t.Fatalf("over a socket left behind: %v", err)
	}
	ln.Close()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	if _, err := Listen("unix:" + file); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the file became %q", b)
	}
}

// The start snapshot's events go where the traced events go: to the
// counters and to Options.Also (--otlp's identity records begin with the
// QPs that exist), and Options.Collectors are served with the metrics.
func TestSnapshotEventsReachAlsoAndCollectorsAreServed(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "m.sock")
	part := &TracerPart{
		Start: func() (Tracer, error) { return &blockingTracer{stopped: make(chan struct{})}, nil },
		Snapshot: func(_ context.Context, emit func(*rdma.Event)) error {
			emit(&rdma.Event{Kind: rdma.EvExists, ID: 17})
			return nil
		},
	}
	var also atomic.Int32
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "rdmatrace_test_extra_total", Help: "a collector of the caller's"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "unix:" + sock, Source: emptySource, Tracer: part, Ready: readyFile(filepath.Join(dir, "ready")),
			Also: func(e *rdma.Event) {
				if e.Kind == rdma.EvExists && e.ID == 17 {
					also.Add(1)
				}
			},
			Collectors: []prometheus.Collector{extra}, Stderr: io.Discard})
	}()
	defer func() { cancel(); <-done }()
	for range 2000 {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := also.Load(); n != 1 {
		t.Errorf("Also got the snapshot's event %d times, want 1", n)
	}
	code, body, err := getOn("unix", sock, "/metrics")
	if err != nil || code != 200 || !strings.Contains(body, "rdmatrace_test_extra_total 0") {
		t.Errorf("/metrics: %d %v, want the caller's collector served:\n%.500s", code, err, body)
	}
}

// readyFile is a ready file as the run lifecycle writes it: the address
// served on, in one step.
func readyFile(path string) func(addr string) error {
	return func(addr string) error { return os.WriteFile(path, []byte(addr+"\n"), 0o600) }
}

// A ready file that cannot be written ends the run with why: a script
// waiting for it would wait for ever.
func TestARefusedReadyFileEndsTheRun(t *testing.T) {
	refused := errors.New("--ready-file: refused")
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Listen: "unix:" + filepath.Join(t.TempDir(), "m.sock"), Source: emptySource,
			Ready: func(string) error { return refused }, Stderr: io.Discard})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, refused) {
			t.Errorf("Run = %v, want the ready file's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run went on without its ready file")
	}
}
