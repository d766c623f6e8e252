//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestTraceOfAProgramRecordsAndReadsBack: `trace -w F --print -j --
// leakqp` follows only leakqp while another holder runs beside it, ends
// when leakqp exits, with its exit status; F then reads back with -r into
// the same lines that were printed.
func TestTraceOfAProgramRecordsAndReadsBack(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	leakqp := filepath.Join(*workloads, "leakqp")
	other := exec.Command(leakqp, device, "hold")
	otherOut, _ := other.StdoutPipe()
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if _, err := bufio.NewReader(otherOut).ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	rec := filepath.Join(t.TempDir(), "rec.ndjson")
	out, stderr, err := runStatus(*rdmatraceBin, "trace", "-w", rec, "--print", "-j", "--", leakqp, device)
	if err != nil {
		t.Fatalf("trace -- leakqp: %v\n%s", err, stderr)
	}
	var printed, lqpn []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if n, ok := strings.CutPrefix(l, "lqpn "); ok {
			lqpn = append(lqpn, n) // leakqp's own stdout
		} else if strings.HasPrefix(l, "{") {
			printed = append(printed, l)
		}
	}
	if len(lqpn) != 1 {
		t.Fatalf("leakqp printed %q", lqpn)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	recorded := strings.Split(strings.TrimSpace(string(b)), "\n")
	if strings.Join(recorded, "\n") != strings.Join(printed, "\n") {
		t.Errorf("the recording differs from what --print showed:\nrecorded %d lines\nprinted %d lines", len(recorded), len(printed))
	}
	createdQP := false
	for _, e := range readTrace(t, b) {
		if e.Owner.Comm != "leakqp" || e.tid() == strconv.Itoa(other.Process.Pid) {
			t.Errorf("an event not of the program: %s", e.line)
		}
		if e.Kind == rdma.EvCreate && e.Has(rdma.EvHasRes) && e.Type == rdma.ResQP && fmt.Sprint(e.LQPN) == lqpn[0] {
			createdQP = true
		}
	}
	if !createdQP {
		t.Errorf("no create of leakqp's QP %s in %d events", lqpn[0], len(recorded))
	}
	back := run(t, *rdmatraceBin, "trace", "-r", rec, "-j")
	if strings.TrimSpace(string(back)) != strings.Join(recorded, "\n") {
		t.Errorf("trace -r -j does not give the recorded lines back:\n%s", back)
	}
	human := run(t, *rdmatraceBin, "trace", "-r", rec, "qp", "--timestamp", "relative")
	if !strings.Contains(string(human), "lqpn="+lqpn[0]) {
		t.Errorf("trace -r qp: no lqpn %s:\n%s", lqpn[0], human)
	}
	t.Logf("trace -- leakqp: %d events recorded; %s", len(recorded), strings.TrimSpace(string(stderr)))
}

// TestKernelDiscardsWhatTheFiltersExclude: with -p naming another
// process, the churn's events never reach user space: the kernel counts
// them as discarded, and none is shown; --no-kernel-filter shows the same
// (nothing) but discards nothing in the kernel.
func TestKernelDiscardsWhatTheFiltersExclude(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	churn := filepath.Join(*workloads, "churn")
	for _, extra := range [][]string{nil, {"--no-kernel-filter"}} {
		tr := startTrace(t, append([]string{"--no-snapshot", "-p", "1"}, extra...)...)
		run(t, churn, device, "300")
		evs := tr.stop()
		if len(evs) != 0 {
			t.Errorf("%v: %d events shown with -p 1, want none: %v", extra, len(evs), evs[0])
		}
		said := tr.stderr.String()
		discarded := strings.Contains(said, "the kernel discarded")
		if discarded == (extra != nil) || (extra == nil && strings.Contains(said, "discarded 0 events")) {
			t.Errorf("%v: stderr %q", extra, said)
		}
		t.Logf("%v: %s", extra, strings.TrimSpace(said))
	}
}
