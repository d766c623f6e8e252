//go:build e2e

package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldObjects is how many PDs and as many CQs pdhog holds: enough that
// the exporter's start snapshot and a scrape take seconds under the
// emulator, few enough to allocate in seconds.
const heldObjects = 2500

// TestExporterUnderAHeldInventory: while nobody (uid 65534) holds
// thousands of PDs and CQs, a SIGTERM sent while the exporter loads its
// tracer and reads the start snapshot ends it within seconds, and a
// started exporter counts every object in a scrape (by owner too) within
// a bounded memory.
func TestExporterUnderAHeldInventory(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	needModuleBTF(t)
	hog := exec.Command(filepath.Join(*workloads, "pdhog"), device, strconv.Itoa(heldObjects))
	hog.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := hog.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	hog.Stderr = os.Stderr
	start := time.Now()
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if want := "pdhog: holding " + strconv.Itoa(heldObjects) + " PDs and " + strconv.Itoa(heldObjects) + " CQs"; strings.TrimSpace(line) != want {
		t.Fatalf("pdhog: %q (%v), want %q", line, err, want)
	}
	t.Logf("pdhog holds %d PDs and %d CQs after %v", heldObjects, heldObjects, time.Since(start).Round(time.Millisecond))

	// A SIGTERM as soon as it serves: its tracer is loading, then reads
	// the snapshot of what exists.
	dir := t.TempDir()
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", filepath.Join(dir, "ready1"))
	errs, err := exp.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	sr := bufio.NewReader(errs)
	var said lockedBuffer
	for !strings.Contains(said.String(), "serving metrics on") {
		l, err := sr.ReadString('\n')
		_, _ = said.Write([]byte(l))
		if err != nil {
			t.Fatalf("the exporter ended before it served: %v\n%s", err, said.String())
		}
	}
	_, readyErr := os.Stat(filepath.Join(dir, "ready1"))
	termAt := time.Now()
	_ = exp.Process.Signal(syscall.SIGTERM)
	go func() { _, _ = io.Copy(&said, sr) }()
	exited := make(chan error, 1)
	go func() { exited <- exp.Wait() }()
	select {
	case err := <-exited:
		d := time.Since(termAt)
		t.Logf("SIGTERM while starting (ready file there: %v): exited after %v (%v)", readyErr == nil, d.Round(time.Millisecond), err)
		if d > 5*time.Second {
			t.Errorf("the exporter took %v to end after a SIGTERM during its start, want seconds at most", d)
		}
	case <-time.After(60 * time.Second):
		_ = exp.Process.Kill()
		<-exited
		t.Fatalf("the exporter still ran 60 s after a SIGTERM during its start\n%s", said.String())
	}

	// Started: a scrape counts every object, and the memory stays bounded.
	ready := filepath.Join(dir, "ready2")
	exp = exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	var stderr lockedBuffer
	exp.Stderr = &stderr
	start = time.Now()
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Process.Signal(syscall.SIGTERM); _ = exp.Wait() }()
	waitFor(t, 120*time.Second, "the exporter to be ready", func() bool { _, err := os.Stat(ready); return err == nil })
	t.Logf("ready after %v", time.Since(start).Round(time.Millisecond))
	b, _ := os.ReadFile(ready)
	addr := strings.TrimSpace(string(b))
	for i := range 3 {
		s := time.Now()
		m := scrape(t, addr)
		t.Logf("scrape %d: %v", i+1, time.Since(s).Round(time.Millisecond))
		for _, typ := range []string{"pd", "cq"} {
			if got := m["rdma_resources{device="+device+",type="+typ+"}"]; got < heldObjects {
				t.Errorf("rdma_resources %s: %v, want at least %d", typ, got, heldObjects)
			}
			if got := m["rdma_resources_by_owner{container=,device="+device+",owner=pdhog,type="+typ+"}"]; got != heldObjects {
				t.Errorf("pdhog's %ss: %v, want %d", typ, got, heldObjects)
			}
		}
	}
	hwm := statusKB(t, exp.Process.Pid, "VmHWM")
	t.Logf("exporter VmHWM %d kB after the start snapshot and 3 scrapes of %d objects", hwm, 2*heldObjects)
	if hwm > 128<<10 {
		t.Errorf("exporter VmHWM %d kB, want under 128 MiB (the DaemonSet's limit is 256 Mi)", hwm)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// statusKB reads a "Key: N kB" line of /proc/PID/status.
func statusKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
