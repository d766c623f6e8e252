//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestTraceWithoutBPFFallsBackToNetlink runs trace as root without
// CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN: it must say in a line why it
// goes without BPF and what is lost, then go on through RDMA netlink.
// One run (a dump every 500 ms, recorded with -w and printed) sees a
// device added and deleted (rxe1 on veth1: from the monitor group on
// Linux 6.12+, as rdma monitor shows it where iproute2 has it; polled
// before) and an rping pair's QPs and cm_ids, held a few seconds, as
// polled creates and destroys with their owner.
func TestTraceWithoutBPFFallsBackToNetlink(t *testing.T) {
	needDevice(t)
	monitor := kernelAtLeast(t, 6, 12)
	dir := t.TempDir()
	ready, rec := filepath.Join(dir, "ready"), filepath.Join(dir, "rec.ndjson")
	tr := exec.Command("setpriv", "--inh-caps=-all", "--bounding-set=-bpf,-perfmon,-sys_admin",
		*rdmatraceBin, "trace", "-j", "-v", "--poll", "500ms", "-w", rec, "--print", "--ready-file", ready)
	var out, stderr bytes.Buffer
	tr.Stdout, tr.Stderr = &out, &stderr
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Process.Kill(); _ = tr.Wait() }()
	waitFor(t, 60*time.Second, "rdmatrace trace to start without BPF", func() bool {
		_, err := os.Stat(ready)
		return err == nil || exited(tr)
	})
	theirs := startRdmaMonitor(t, monitor)

	// A device added and deleted.
	run(t, "rdma", "link", "add", "rxe1", "type", "rxe", "netdev", "veth1")
	waitFor(t, 30*time.Second, "rxe1 to appear", func() bool { _, err := os.Stat("/sys/class/infiniband/rxe1"); return err == nil })
	time.Sleep(1500 * time.Millisecond) // three dumps: a kernel without the monitor group is polled
	run(t, "rdma", "link", "delete", "rxe1")

	// An rping pair, connected and held for 3 s (six dumps), then killed.
	w := &workload{t: t}
	t.Cleanup(w.stop)
	p := &pair{qps: 1, server: func(port string) []string { return []string{"rping", "-s", "-a", addr, "-p", port, "-C", "10000000"} },
		client: func(port string) []string { return []string{"rping", "-c", "-a", addr, "-p", port, "-C", "10000000"} }}
	w.startPair(p)
	clientTIDs, serverTIDs := threads(p.c), threads(p.s)
	w.drop(p.c)
	w.drop(p.s)
	time.Sleep(1500 * time.Millisecond)

	_ = tr.Process.Signal(syscall.SIGINT)
	if err := tr.Wait(); err != nil {
		t.Fatalf("rdmatrace trace without BPF: %v\n%s", err, stderr.String())
	}
	keep(t, "trace/"+t.Name()+".ndjson", out.Bytes())
	t.Logf("kernel %s: stderr:\n%s", release(t), stderr.String())
	checkFallbackLine(t, stderr.String(), monitor)
	evs := readTrace(t, out.Bytes())
	checkDeviceEvents(t, evs, monitor, theirs)
	checkPolledPair(t, evs, clientTIDs, serverTIDs)

	// The recording is what was printed, polled marks and all.
	recorded, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(recorded, out.Bytes()) {
		t.Errorf("-w wrote other lines than --print printed:\n%s\n---\n%s", recorded, out.Bytes())
	}
	if back := run(t, *rdmatraceBin, "trace", "-r", rec, "-j"); !bytes.Equal(back, out.Bytes()) {
		t.Errorf("trace -r gives back other lines:\n%s\n---\n%s", back, out.Bytes())
	}
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	f := strings.FieldsFunc(release(t), func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		t.Fatalf("kernel release %q: no major.minor", release(t))
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}

// checkFallbackLine: one line says there is no BPF and why (the missing
// capabilities), what trace does instead and what it cannot see; -v says
// whether the monitor group is read.
func checkFallbackLine(t *testing.T, stderr string, monitor bool) {
	t.Helper()
	var line string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "rdmatrace: no BPF: ") {
			line = l
		}
	}
	for _, want := range []string{"CAP_BPF and CAP_PERFMON", "through RDMA netlink", "polled", "rdma_cm events", "between two dumps"} {
		if !strings.Contains(line, want) {
			t.Errorf("kernel %s: the fallback line lacks %q: %q", release(t), want, line)
		}
	}
	mode := "rdmatrace: mode: netlink (monitor group: not used"
	if monitor {
		mode = "rdmatrace: mode: netlink (monitor group: joined"
	}
	if !strings.Contains(stderr, mode) {
		t.Errorf("kernel %s: stderr lacks %q", release(t), mode)
	}
}

// rdmaMonitor is iproute2's rdma monitor -j, run beside the trace.
type rdmaMonitor struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startRdmaMonitor starts rdma monitor -j where both the kernel and
// iproute2 have it; nil (and said) where not.
func startRdmaMonitor(t *testing.T, kernelHasIt bool) *rdmaMonitor {
	t.Helper()
	_, help, _ := runStatus("rdma", "help")
	if !kernelHasIt || !bytes.Contains(help, []byte("monitor")) {
		t.Logf("kernel %s, iproute2 %s: no rdma monitor to compare with (kernel 6.12+ and iproute2 6.13+ have it)",
			release(t), strings.TrimSpace(string(firstLine(run(t, "rdma", "-V")))))
		return nil
	}
	m := &rdmaMonitor{cmd: exec.Command("rdma", "-j", "monitor")}
	m.cmd.Stdout = &m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.cmd.Process.Kill(); _ = m.cmd.Wait() })
	time.Sleep(500 * time.Millisecond) // joined before the device comes
	return m
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// checkDeviceEvents: rxe1's registration and unregistration, as the
// monitor group says them (not polled) where the kernel has it, polled
// where not; beside rdma monitor, the same events of rxe1 in the same
// order.
func checkDeviceEvents(t *testing.T, evs []traced, monitor bool, theirs *rdmaMonitor) {
	t.Helper()
	var ours []string
	for _, e := range evs {
		if !e.Kind.IsDevice() || (e.DevName != "rxe1" && e.Netdev != "veth1") {
			continue
		}
		ours = append(ours, e.Kind.String())
		if e.Has(rdma.EvPolled) == monitor {
			t.Errorf("kernel %s (monitor group %v): %s is polled %v", release(t), monitor, e.line, e.Has(rdma.EvPolled))
		}
	}
	t.Logf("kernel %s: rxe1's events: %v", release(t), ours)
	reg, unreg := -1, -1
	for i, k := range ours {
		switch k {
		case "dev_register":
			reg = i
		case "dev_unregistered":
			unreg = i
		}
	}
	if reg < 0 || unreg < reg {
		t.Errorf("kernel %s: rxe1's events %v, want dev_register then dev_unregistered", release(t), ours)
	}
	if theirs == nil {
		return
	}
	_ = theirs.cmd.Process.Signal(syscall.SIGTERM)
	_ = theirs.cmd.Wait()
	keep(t, "rdma/monitor.ndjson", theirs.out.Bytes())
	names := map[string]string{"REGISTER": "dev_register", "UNREGISTER": "dev_unregistered", "NETDEV_ATTACH": "netdev-attach",
		"NETDEV_DETACH": "netdev-detach", "RENAME": "dev-rename", "NETDEV_RENAME": "netdev-rename"}
	var want []string
	for _, l := range strings.Split(theirs.out.String(), "\n") {
		if !strings.Contains(l, `"rxe1"`) && !strings.Contains(l, `"veth1"`) {
			continue
		}
		for k, v := range names {
			if strings.Contains(l, `"event_type":"`+k+`"`) {
				want = append(want, v)
			}
		}
	}
	if fmt.Sprint(want) != fmt.Sprint(ours) {
		t.Errorf("kernel %s: rdma monitor saw %v of rxe1, rdmatrace %v\n%s", release(t), want, ours, theirs.out.String())
	}
}

// checkPolledPair: the pair's QPs and cm_ids were created and destroyed
// between dumps: each is a polled create and a polled destroy, owned by
// one of rping's threads (comm rping); what existed at the start is not
// polled.
func checkPolledPair(t *testing.T, evs []traced, tids ...map[uint32]bool) {
	t.Helper()
	ours := func(e *traced) bool {
		for _, m := range tids {
			if m[e.Owner.TID] {
				return true
			}
		}
		return false
	}
	type seen struct{ create, destroy int }
	got := map[rdma.ResType]*seen{rdma.ResQP: {}, rdma.ResCMID: {}}
	for i := range evs {
		e := &evs[i]
		if e.Kind == rdma.EvExists && e.Has(rdma.EvPolled) {
			t.Errorf("an exists event is polled: %s", e.line)
		}
		s := got[e.Type]
		if s == nil || !e.Has(rdma.EvHasRes) || !ours(e) {
			continue
		}
		if !e.Has(rdma.EvPolled) || e.Owner.Comm != "rping" {
			t.Errorf("rping's %s: not polled, or not owned by rping: %s", e.Type, e.line)
		}
		switch e.Kind {
		case rdma.EvCreate:
			s.create++
		case rdma.EvDestroy:
			s.destroy++
		}
	}
	for typ, s := range got {
		// Each rping holds one RC QP; the server a listener and a
		// connected cm_id, the client one.
		if s.create < 2 || s.destroy != s.create {
			t.Errorf("kernel %s: rping's %ss: %d polled creates, %d polled destroys; want at least 2 of each, as many destroys as creates",
				release(t), typ, s.create, s.destroy)
		}
	}
}
