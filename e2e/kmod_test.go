//go:build e2e

package e2e

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestMain runs this file's test last: its module leaks on purpose, and the
// kernel warns.

var kmodDir = flag.String("kmod", "out/kmod", "where guest/kmod.sh put rdmatrace_leak.ko, by kernel release")

// TestLeaksNamesWhatAKernelModuleLeft loads rdmatrace_leak, an ib_client
// that allocates a PD, a CQ and a QP on rxe1 and does not free them when
// the device goes. The kernel prints bare WARNINGs; rdmatrace must name
// each object with its type, id and the module.
func TestLeaksNamesWhatAKernelModuleLeft(t *testing.T) {
	needDevice(t) // the RDMA stack and veth1
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	ko := filepath.Join(*kmodDir, strings.TrimSpace(string(rel)), "rdmatrace_leak.ko")
	if _, err := os.Stat(ko); err != nil {
		// guest/kmod.sh says why it could not build for this kernel.
		if why, err := os.ReadFile(filepath.Join(filepath.Dir(ko), "unbuildable")); err == nil {
			t.Skipf("no leak module for kernel %s: %s", strings.TrimSpace(string(rel)), strings.TrimSpace(string(why)))
		}
		t.Fatalf("%v: build it with guest/kmod.sh (make e2e does)", err)
	}
	const dev = "rxe1"
	l := startLeaks(t, "--filter-dev", dev)
	tr := startTrace(t, "--no-snapshot") // a recording for the post-mortem below
	run(t, "rdma", "link", "add", dev, "type", "rxe", "netdev", "veth1")
	run(t, "insmod", ko, "dev="+dev)
	t.Cleanup(func() { _, _, _ = runStatus("rmmod", "rdmatrace_leak") })
	waitFor(t, 30*time.Second, "the module's QP in rdma res", func() bool {
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.DevName == dev && r.Owner.KernName == "rdmatrace_leak" {
				return true
			}
		}
		return false
	})
	mark := string(run(t, "dmesg"))
	run(t, "rdma", "link", "delete", dev)

	var done finding
	waitFor(t, 30*time.Second, "the unregistered report of "+dev, func() bool {
		for _, f := range l.out.findings(t) {
			if f.Report == "unregistered" && f.Ifname == dev {
				done = f
				return true
			}
		}
		return false
	})
	if text(done.Left) != "3" {
		t.Errorf("unregistered: %v, want 3 left (the module's PD, CQ and QP)", done)
	}
	after := string(run(t, "dmesg"))
	log := strings.TrimPrefix(after, mark)
	keep(t, "kmod/dmesg.txt", []byte(log))
	m := regexp.MustCompile(`rdmatrace_leak: rxe1: holding pd, cq and qp (\d+)`).FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("the module did not say which QP it holds:\n%s", after)
	}
	left := map[string]*finding{}
	for _, f := range l.out.findings(t) {
		if f.Report == "left" && f.Ifname == dev {
			left[f.Res] = &f
		}
	}
	for _, res := range []string{"pd", "cq", "qp"} {
		f := left[res]
		switch {
		case f == nil:
			t.Errorf("the module's %s is not reported as left behind:\n%s", res, l.out.String())
		case f.KernName != "rdmatrace_leak":
			t.Errorf("left %s: kern-name %q, want rdmatrace_leak", res, f.KernName)
		case res == "qp" && text(f.LQPN) != m[1]:
			t.Errorf("left QP lqpn %v, the module holds %s", text(f.LQPN), m[1])
		case res != "qp" && f.ID == nil:
			t.Errorf("left %s has no id: %v", res, f)
		}
	}
	// What the kernel says instead: WARNINGs at restrack.c, without names.
	if !strings.Contains(log, "restrack.c") {
		t.Errorf("the kernel printed no restrack.c WARNING:\n%s", log)
	}
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	err = l.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("rdmatrace leaks: %v, want exit status 3\n%s", err, l.stderr.String())
	}
	keep(t, "kmod/leaks.ndjson", []byte(l.out.String()+"\n"))

	// Post-mortem: the same dmesg and a trace recording of the same boot
	// name what the WARNINGs leave unnamed.
	tr.stop()
	dir := t.TempDir()
	logPath, recPath := filepath.Join(dir, "dmesg.txt"), filepath.Join(dir, "trace.ndjson")
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recPath, tr.out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	keep(t, "kmod/trace.ndjson", tr.out.Bytes())
	out, stderr, err := runStatus(*rdmatraceBin, "leaks", "-j", "--log", logPath, "--recording", recPath)
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("leaks --log --recording: %v, want exit status 3\n%s", err, stderr)
	}
	warnings, named := 0, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := readFinding(t, "leaks --log -j", line)
		switch {
		case f.Report == "kernel-log" && f.Kind == "restrack-warning":
			warnings++
		case f.Report == "left" && f.KernName == "rdmatrace_leak" && f.Ifname == dev:
			named[f.Res] = true
		}
	}
	if warnings != 3 || !named["pd"] || !named["cq"] || !named["qp"] {
		t.Errorf("post-mortem: %d restrack WARNINGs (want 3), named %v (want pd, cq, qp of rdmatrace_leak):\n%s", warnings, named, out)
	}
}
