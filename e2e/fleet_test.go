//go:build e2e

package e2e

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

// fleetDevice is this test's own soft-RoCE device, on lo: it is deleted
// at the end, so that the first phase's other test still finds no device.
const fleetDevice = "rxefleet"

// Runs in the first phase (TestMain), before any device exists: with the
// RDMA modules unloaded, as on a node of a fleet that has no RDMA yet, the
// exporter serves (healthz, readyz, its metrics with part_up 0 for netlink
// and the tracer) instead of exiting; once the modules are loaded and a
// soft-RoCE device comes up, netlink's metrics follow and the retried
// tracer starts and counts a QP's creation.
func TestExporterServesBeforeTheRDMAStackAndFollowsIt(t *testing.T) {
	if entries, _ := os.ReadDir("/sys/class/infiniband"); len(entries) > 0 {
		t.Skipf("an RDMA device exists (%s): this test unloads the RDMA modules, so it runs in the first phase, before any device", entries[0].Name())
	}
	out, err := exec.Command("modprobe", "-r", "-a", "rdma_ucm", "ib_uverbs", "ib_umad", "rdma_cm", "iw_cm", "ib_cm", "ib_core").CombinedOutput()
	if err != nil {
		// sid's kernel kept ib_core in use with no device and no RDMA
		// module of ours loaded: the test needs a stack it can unload.
		t.Skipf("the RDMA modules cannot be unloaded here, so the stack cannot be made absent: modprobe -r: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// A netlink socket of the RDMA family makes the kernel load ib_core
	// (its module alias), so the exporter's first scrape would load it:
	// the kernel's module loader is off while the stack must stay absent,
	// as on a node without the modules.
	const modprobePath = "/proc/sys/kernel/modprobe"
	loader, err := os.ReadFile(modprobePath)
	if err != nil {
		t.Fatal(err)
	}
	restoreLoader := func() {
		if err := os.WriteFile(modprobePath, loader, 0o644); err != nil {
			t.Errorf("%s: %v", modprobePath, err)
		}
	}
	if err := os.WriteFile(modprobePath, []byte("/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var restoreOnce sync.Once
	t.Cleanup(func() { restoreOnce.Do(restoreLoader) })
	// TestMain's state again at the end, whatever happens here.
	t.Cleanup(func() {
		if out, err := exec.Command("modprobe", "-a", "ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm").CombinedOutput(); err != nil {
			t.Errorf("modprobe the RDMA modules again: %v\n%s", err, out)
		}
	})
	if _, err := os.Stat("/sys/module/ib_core"); err == nil {
		t.Fatal("ib_core still loaded after modprobe -r")
	}
	ready := filepath.Join(t.TempDir(), "ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	var stderr lockedBuffer
	exp.Stderr = &stderr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- exp.Wait() }()
	defer func() {
		_ = exp.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exporter after SIGTERM: %v, want exit 0", err)
			}
		case <-time.After(60 * time.Second): // its hooks' detach: seconds under the emulator beside other guests
			_ = exp.Process.Kill()
			t.Error("exporter still running 60 s after SIGTERM")
		}
		t.Logf("exporter:\n%s", stderr.String())
	}()
	waitFor(t, 60*time.Second, "the exporter to be ready without the RDMA stack", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the exporter exited without the RDMA stack: %v\n%s", err, stderr.String())
		default:
		}
		b, err := os.ReadFile(ready)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	b, _ := os.ReadFile(ready)
	addr := strings.TrimSpace(string(b))
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok\n" {
			t.Errorf("%s without the RDMA stack: %d %q, want 200 ok", p, resp.StatusCode, body)
		}
	}
	m := scrape(t, addr)
	if m["rdmatrace_part_up{part=netlink}"] != 0 || m["rdmatrace_part_up{part=tracer}"] != 0 {
		t.Errorf("without the RDMA stack: part_up netlink %v, tracer %v; want both 0",
			m["rdmatrace_part_up{part=netlink}"], m["rdmatrace_part_up{part=tracer}"])
	}
	if _, ok := m["rdmatrace_part_up{part=tracer}"]; !ok {
		t.Error("no rdmatrace_part_up{part=tracer} series")
	}
	if _, ok := m["rdmatrace_hooks{state=attached}"]; ok {
		t.Error("rdmatrace_hooks served while the tracer is down")
	}

	if _, err := os.Stat("/sys/module/ib_core"); err == nil {
		t.Error("ib_core was loaded while the module loader was off")
	}
	restoreOnce.Do(restoreLoader)
	run(t, "modprobe", "-a", "ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm", "rdma_rxe")
	needModuleBTF(t)
	run(t, "rdma", "link", "add", fleetDevice, "type", "rxe", "netdev", "lo")
	t.Cleanup(func() { // after the holder's end (a later cleanup runs first)
		if out, err := exec.Command("rdma", "link", "delete", fleetDevice).CombinedOutput(); err != nil {
			t.Errorf("rdma link delete %s: %v\n%s", fleetDevice, err, out)
		}
	})
	var last map[string]float64
	waitFor(t, 90*time.Second, "netlink's metrics and the tracer after "+fleetDevice+" came up", func() bool {
		last = scrape(t, addr)
		return last["rdmatrace_part_up{part=netlink}"] == 1 && last["rdmatrace_part_up{part=tracer}"] == 1 &&
			last["rdma_port_active{device="+fleetDevice+",port=1}"] == 1 && last["rdmatrace_hooks{state=attached}"] >= 1
	})
	startHolder(t, fleetDevice)
	waitFor(t, 30*time.Second, "the holder's QP to be counted", func() bool {
		last = scrape(t, addr)
		return last["rdma_resource_creates_total{device="+fleetDevice+",type=qp}"] >= 1 &&
			last["rdma_resources_by_owner{container=,device="+fleetDevice+",owner=leakqp,type=qp}"] == 1
	})
	log := stderr.String()
	if n := strings.Count(log, "tracer cannot start: "); n < 1 || n > 2 {
		// at most twice: without ib_core, then perhaps between modprobes
		t.Errorf("the tracer's failure logged %d times, want once per reason:\n%s", n, log)
	}
	if !strings.Contains(log, "rdmatrace: tracer started") {
		t.Errorf("no line says the tracer started:\n%s", log)
	}
}

// lockedBuffer is a process's stderr that the test reads while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
