package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A node where the tracer cannot start (here: a user without CAP_BPF) is
// still served: the exporter says once why the tracer is down, serves
// /healthz, /readyz and the metrics with rdmatrace_part_up{part="tracer"}
// 0, keeps trying, and exits 0 on SIGTERM. A DaemonSet must not
// crash-loop on such a node.
func TestExporterServesWithoutTheTracer(t *testing.T) {
	setpriv, bin, dir := asNobody(t)
	w := filepath.Join(dir, "w")
	if err := os.Mkdir(w, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(w, 0o777)
	ready := filepath.Join(w, "ready")
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		bin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
	var stderr syncBuilder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			addr = strings.TrimSpace(string(b))
		}
		select {
		case err := <-exited:
			t.Fatalf("the exporter exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready file after 20 s:\n%s", stderr.String())
		}
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(p); code != 200 || body != "ok\n" {
			t.Errorf("%s: %d %q, want 200 ok", p, code, body)
		}
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `rdmatrace_part_up{part="tracer"} 0`) ||
		!strings.Contains(body, "rdmatrace_build_info{") || strings.Contains(body, "rdmatrace_hooks") {
		t.Errorf("/metrics: %d, want 200 with part_up{tracer} 0, build_info, no hooks:\n%s", code, body)
	}
	time.Sleep(3 * time.Second) // a few retries: still one line
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM")
	}
	out := stderr.String()
	if n := strings.Count(out, "tracer cannot start: exporter: needs root: "); n != 1 || !strings.Contains(out, "CAP_BPF and CAP_PERFMON") {
		t.Errorf("stderr says the tracer cannot start %d times, want once, naming CAP_BPF and CAP_PERFMON:\n%s", n, out)
	}
}

// syncBuilder is a strings.Builder the command's stderr copier and the
// test share.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
