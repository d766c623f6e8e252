//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
)

// rdmatrace health on rxe0, as node-problem-detector or a Slurm prolog
// runs it:
//   - healthy (exit 0);
//   - an rdma cgroup with no room left on rxe0: exit 1, the cgroup named;
//   - veth0 down: exit 1, the port named on the first line, and the same
//     from a window polled without BPF (-j says where its events came
//     from); a window of the tracer's open when it went down names the
//     PORT_ERR;
//   - healthy again once veth0 is back up.
func TestHealthSaysWhenTheNodeIsUnfit(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	health := func(args ...string) (string, int) {
		t.Helper()
		start := time.Now()
		out, stderr, err := runStatus(*rdmatraceBin, append([]string{"health", "-d", device}, args...)...)
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatalf("rdmatrace health: %v\n%s", err, stderr)
		}
		t.Logf("rdmatrace health %s: exit %d in %v\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out, stderr)
		return string(out), code
	}
	verdict := func(out string) map[string]any {
		t.Helper()
		var objs []map[string]any
		if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) == 0 {
			t.Fatalf("health -j: %v\n%s", err, out)
		}
		return objs[0]
	}

	// The tracer is loaded once, for the window across the fall: under
	// TCG a load takes 10 to 30 s.
	out, code := health("-j")
	if v := verdict(out); code != 0 || v["status"] != "healthy" {
		t.Errorf("a healthy rxe0: exit %d, verdict %v; want 0, healthy", code, v)
	}

	// No room left: rdma.max hca_object=0 on rxe0.
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	if err := os.WriteFile(filepath.Join(mount, "cgroup.subtree_control"), []byte("+rdma"), 0o644); err != nil {
		t.Fatalf("enabling the rdma controller: %v", err)
	}
	cg := filepath.Join(mount, "rdmatrace-health")
	if err := os.Mkdir(cg, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	// Limits back to max before the cgroup goes: that frees its resource
	// pool on rxe0. A pool left to the removal outlives the cgroup, and
	// rxe0's next unregister hits "list_del corruption" in
	// free_cg_rpool_locked (6.1, 6.12), as the failed-create test found.
	removed := false
	remove := func() error {
		if removed {
			return nil
		}
		if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(device+" hca_handle=max hca_object=max"), 0o644); err != nil {
			return fmt.Errorf("rdma.max back to max: %w", err)
		}
		removed = true
		return os.Remove(cg)
	}
	t.Cleanup(func() {
		if err := remove(); err != nil {
			t.Error(err)
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(device+" hca_object=0"), 0o644); err != nil {
		t.Fatalf("rdma.max: %v", err)
	}
	out, code = health()
	if want := "limits: rdma cgroup /rdmatrace-health: hca_object 0 of 0 in use on " + device + "\n"; code != 1 || out != want {
		t.Errorf("a cgroup with no room: exit %d, %q; want 1 and %q", code, out, want)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}

	// A window of the tracer's, open across the fall.
	ready := filepath.Join(t.TempDir(), "ready")
	var traced bytes.Buffer
	window := exec.Command(*rdmatraceBin, "health", "-d", device, "--since", "5s", "-j", "--ready-file", ready)
	window.Stdout, window.Stderr = &traced, &traced
	if err := window.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = window.Process.Kill(); _ = window.Wait() })
	start := time.Now()
	waitFor(t, time.Minute, "health's window to begin", func() bool { _, err := os.Stat(ready); return err == nil })
	t.Logf("health's tracer attached in %v", time.Since(start).Round(time.Millisecond))

	run(t, "ip", "link", "set", "veth0", "down")
	t.Cleanup(func() {
		_, _, _ = runStatus("ip", "link", "set", "veth0", "up")
		_, _ = exec.Command(*rdmaUp).CombinedOutput()
	})
	waitFor(t, 10*time.Second, device+"/1 DOWN", func() bool { return strings.Contains(portState(t), "DOWN") })
	out, code = health()
	if first, _, _ := strings.Cut(out, "\n"); code != 1 || !strings.HasPrefix(first, "ports: "+device+"/1 is DOWN") {
		t.Errorf("veth0 down: exit %d, first line %q; want 1 and the port named", code, first)
	}
	out, code = health("--since", "1s", "--no-bpf", "-j")
	if v := verdict(out); code != 1 || v["events-from"] != "netlink" || !strings.Contains(out, `"detail":"`+device+`/1 is DOWN`) || strings.Contains(out, "went through") {
		t.Errorf("veth0 down, polled: exit %d, verdict %v; want 1, from netlink, the port named once (down all along is no flap)", code, v)
	}
	err = window.Wait()
	t.Logf("rdmatrace health --since 5s -j, across the fall: %v\n%s", err, traced.Bytes())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(traced.String(), `"detail":"`+device+`/1: the port went down (PORT_ERR) in the last 5s"`) {
		t.Errorf("a window of the tracer's across the fall: %v; want exit 1 and the PORT_ERR named", err)
	}

	run(t, "ip", "link", "set", "veth0", "up")
	if b, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", *rdmaUp, err, b)
	}
	// The IPv6 link-local address gets its GID once its duplicate
	// address detection ends: health may say so for a moment.
	waitFor(t, 15*time.Second, "health to say healthy again", func() bool {
		out, code := health()
		return code == 0 && strings.HasPrefix(out, "healthy: ")
	})
}
