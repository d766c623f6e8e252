//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestIproute2Habits runs the forms that iproute2's rdma users type by
// habit against a live device: show and its abbreviations, a device or
// port named after show, global options before the object, -p, -dd, an
// unknown device, and trace's iproute2 filter words.
func TestIproute2Habits(t *testing.T) {
	needDevice(t)
	rt := *rdmatraceBin
	objs := func(js []byte) []countsRow {
		t.Helper()
		var o []countsRow
		if err := json.Unmarshal(js, &o); err != nil {
			t.Fatalf("%v: %s", err, js)
		}
		return o
	}
	if o := objs(run(t, rt, "dev", "show", device, "-j")); len(o) != 1 || o[0].Ifname != device {
		t.Errorf("dev show %s -j: %v, want that device only", device, o)
	}
	if o := objs(run(t, rt, "link", "show", device+"/1", "-j")); len(o) != 1 || o[0].Ifname != device {
		t.Errorf("link show %s/1 -j: %v, want its port 1 only", device, o)
	}
	if o := objs(run(t, rt, "-j", "res", "show", device)); len(o) != 1 || o[0].Ifname != device {
		t.Errorf("-j res show %s: %v, want its counts only", device, o)
	}
	for _, args := range [][]string{{"-j", "res", "show", "qp"}, {"res", "-j", "s", "qp", "-d"}, {"res", "qp", "-dd", "-j"}} {
		if o := objs(run(t, rt, args...)); len(o) == 0 {
			t.Errorf("%v: no QP (the GSI QP is always there)", args)
		}
	}
	plain, pretty := run(t, rt, "dev", "-j", "-d"), run(t, rt, "-p", "-j", "-dd", "dev")
	var a, b bytes.Buffer
	if err := json.Compact(&a, plain); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&b, pretty); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || !bytes.Contains(pretty, []byte("\n    ")) {
		t.Errorf("-p -j -dd dev is not dev -j -d indented:\n%s\n%s", plain, pretty)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "show", "nosuch0"}, `unknown device "nosuch0": the devices are ` + device},
		{[]string{"link", "show", "nosuch0/1"}, `unknown device "nosuch0"`},
		{[]string{"link", "show", device + "/9"}, "has no port \"9\""},
	} {
		out, stderr, err := runStatus(rt, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || len(out) != 0 || !strings.Contains(string(stderr), tc.want) {
			t.Errorf("%v: %v, stdout %q, stderr %q; want exit 1 and %q", tc.args, err, out, stderr, tc.want)
		}
	}
	// ps: ib_core holds the GSI QP; each type's total is res's count.
	rows := objs(run(t, rt, "ps", "-j"))
	total := map[string]float64{}
	sawCore := false
	for _, r := range rows {
		sawCore = sawCore || r.KernName == "ib_core"
		for _, k := range []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"} {
			n, _ := r.count(k)
			total[k] += n
		}
	}
	if !sawCore {
		t.Errorf("ps -j: no [ib_core] row: %v", rows)
	}
	for _, sum := range objs(run(t, rt, "res", "-j")) {
		for k := range total {
			n, _ := sum.count(k)
			total[k] -= n
		}
	}
	for k, d := range total {
		if d != 0 {
			t.Errorf("ps -j counts %v more %s than res -j", d, k)
		}
	}
	// trace with iproute2's words: the snapshot's GSI QP is ib_core's.
	t.Run("trace-words", func(t *testing.T) {
		needModuleBTF(t)
		traceWords(t)
	})
}

func traceWords(t *testing.T) {
	rt := *rdmatraceBin
	out := run(t, rt, "trace", "qp", "comm", "ib_core", "-j", "--duration", "1s")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("trace qp comm ib_core: nothing")
	}
	for _, l := range lines {
		if !strings.Contains(l, `"res":"qp"`) || !strings.Contains(l, `"ib_core"`) {
			t.Errorf("trace qp comm ib_core let through %s", l)
		}
	}
}

// TestCMRejectReasonIsNamed connects rping to a port nobody listens on:
// the peer's CM rejects it with IB_CM_REJ_INVALID_SERVICE_ID (8), which
// trace names as rdma_reject_msg does.
func TestCMRejectReasonIsNamed(t *testing.T) {
	needDevice(t)
	tr := startTrace(t, "--no-snapshot", "cm_id", "event", "cm_event_handler")
	_, _, err := runStatus("rping", "-c", "-a", addr, "-p", "7999", "-C", "1")
	if err == nil {
		t.Error("rping to a port without a listener succeeded")
	}
	time.Sleep(500 * time.Millisecond)
	evs := tr.stop()
	for _, e := range evs {
		if e.Kind != rdma.EvCMEventHandler || !e.Has(rdma.EvHasRes) || e.Type != rdma.ResCMID {
			t.Errorf("the filter cm_id event cm_event_handler let through %v", e)
		}
		if e.Has(rdma.EvHasCM) && e.CMEvent == rdma.CMRejected {
			if e.Status != 8 || e.StatusName != "invalid service ID" {
				t.Errorf("REJECTED with status %v, status-name %q; want 8, \"invalid service ID\"", e.Status, e.StatusName)
			}
			return
		}
	}
	t.Errorf("no REJECTED event among %d: %v", len(evs), evs)
}
