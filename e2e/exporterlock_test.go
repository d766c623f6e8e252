//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdSlotsEnv makes the test binary a connection holder (see TestMain):
// "NETWORK ADDR N" opens N keep-alive connections to ADDR, makes one
// request on each and keeps them open and idle until its stdin closes,
// as any local user can; it prints "holding N", or the error that
// stopped it and exits 1.
const holdSlotsEnv = "RDMATRACE_E2E_HOLDSLOTS"

func holdSlots() int {
	f := strings.Fields(os.Getenv(holdSlotsEnv))
	n, err := 0, error(nil)
	if len(f) == 3 {
		n, err = strconv.Atoi(f[2])
	}
	if len(f) != 3 || err != nil {
		fmt.Fprintf(os.Stderr, "%s: %q, want NETWORK ADDR N\n", holdSlotsEnv, os.Getenv(holdSlotsEnv))
		return 2
	}
	var conns []net.Conn
	for i := range n {
		c, err := net.DialTimeout(f[0], f[1], 10*time.Second)
		if err == nil {
			conns = append(conns, c)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		if err == nil {
			var resp *http.Response
			if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		if err != nil {
			fmt.Printf("connection %d: %v\n", i+1, err)
			return 1
		}
		_ = c.SetDeadline(time.Time{})
	}
	fmt.Printf("holding %d\n", len(conns))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// holdAsNobody runs the holder as uid 65534 and returns its first line;
// the holder is ended at the test's end.
func holdAsNobody(t *testing.T, network, addr string, n int) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := exec.Command(self)
	h.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", holdSlotsEnv, network, addr, n))
	h.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	h.Stderr = os.Stderr
	stdin, err := h.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = h.Process.Kill(); _ = h.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	return strings.TrimSpace(line)
}

// getWithin is one GET on a connection of its own (a unix socket's path
// for addr "unix:PATH"), given up after limit.
func getWithin(addr, path string, limit time.Duration) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
		addr = "x"
	}
	c := &http.Client{Timeout: limit, Transport: tr}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), nil
}

// startExporter starts rdmatrace exporter with args and a ready file,
// and returns the address its ready file names and its stderr; it is
// ended at the test's end.
func startExporter(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	exp := exec.Command(*rdmatraceBin, append([]string{"exporter", "--ready-file", ready}, args...)...)
	stderr := &lockedBuffer{}
	exp.Stderr = stderr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Process.Signal(syscall.SIGTERM); _ = exp.Wait() })
	waitFor(t, 60*time.Second, "the exporter to be ready", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	b, _ := os.ReadFile(ready)
	return strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]), stderr
}

// TestExporterIsNotLockedOutByHeldConnections: 64 keep-alive connections
// (the default cap) that nobody (uid 65534) holds open do not keep root's
// probes and scrapes out: the one idle longest is closed for each, which
// is counted and logged. Before, all six /healthz timed out. Then the
// ways in that no other user has: --listen unix:PATH is a socket nobody
// cannot connect to, and --web.probe-listen answers the probes alone.
// The exporter serves netlink's counts alone (--no-trace): the tracer
// plays no part in its connections.
func TestExporterIsNotLockedOutByHeldConnections(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	const held = 64
	addr, stderr := startExporter(t, "--no-trace", "--listen", "127.0.0.1:0")
	if got := holdAsNobody(t, "tcp", addr, held); got != fmt.Sprint("holding ", held) {
		t.Fatalf("nobody's holder: %q, want holding %d", got, held)
	}
	for i := range 6 {
		start := time.Now()
		code, body, err := getWithin(addr, "/healthz", 5*time.Second)
		t.Logf("/healthz %d beside %d held connections: %d %v in %v", i+1, held, code, err, time.Since(start).Round(time.Millisecond))
		if err != nil || code != 200 {
			t.Errorf("/healthz %d beside %d connections nobody holds: %d %v %.100q", i+1, held, code, err, body)
		}
	}
	start := time.Now()
	code, body, err := getWithin(addr, "/metrics", 10*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("/metrics beside %d connections nobody holds: %d %v", held, code, err)
	}
	t.Logf("/metrics in %v", time.Since(start).Round(time.Millisecond))
	m := regexp.MustCompile(`(?m)^rdmatrace_http_connections_shed_total\{listener="metrics"\} (\d+)$`).FindStringSubmatch(body)
	if m == nil || m[1] == "0" {
		t.Errorf("rdmatrace_http_connections_shed_total: %q, want the 7 newcomers' room counted", m)
	}
	if n := strings.Count(stderr.String(), "closed the one idle longest"); n < 1 || n > 2 {
		t.Errorf("%d lines about the shedding, want one every 10 s at most:\n%s", n, stderr.String())
	}

	// A unix socket and the probes' own listener.
	// A directory that user nobody may search (t.TempDir's parent is 0700 to all
	// but root): the socket's mode alone must refuse nobody.
	dir, err := os.MkdirTemp("", "rdmatrace-e2e-sock")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "metrics.sock")
	addr, stderr = startExporter(t, "--no-trace", "--listen", "unix:"+sock, "--web.probe-listen", "127.0.0.1:0")
	if addr != "unix:"+sock {
		t.Errorf("ready file names %q, want unix:%s", addr, sock)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want a socket of mode 0600", sock, fi.Mode(), err)
	}
	if got := holdAsNobody(t, "unix", sock, 1); !strings.Contains(got, "permission denied") {
		t.Errorf("nobody's connection to %s: %q, want permission denied", sock, got)
	}
	if code, body, err := getWithin(addr, "/metrics", 10*time.Second); err != nil || code != 200 || !strings.Contains(body, "rdma_resources{") {
		t.Errorf("root's scrape on %s: %d %v %.200q", sock, code, err, body)
	}
	probes := regexp.MustCompile(`serving /healthz and /readyz on (\S+) too`).FindStringSubmatch(stderr.String())
	if probes == nil {
		t.Fatalf("no line names the probes' listener:\n%s", stderr.String())
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404} {
		if code, _, err := getWithin(probes[1], path, 5*time.Second); err != nil || code != want {
			t.Errorf("%s on the probes' listener %s: %d %v, want %d", path, probes[1], code, err, want)
		}
	}
}
