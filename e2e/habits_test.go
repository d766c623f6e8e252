//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
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
		{[]string{"res", "show", "nosuch0"}, `unknown device "nosuch0": the devices are ` + device},
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

// TestHabitsOfPsSsBpftraceAndRdma runs the habits of other tools against
// a live device: ps -p PID (procps, lsof), ps as a user who cannot read
// root's open files, ss's bundled flags on ports (an iWARP and a RoCE
// listener among the host's sockets), bpftrace's -l on trace, rdma's
// command abbreviations and its -d on res and dev.
func TestHabitsOfPsSsBpftraceAndRdma(t *testing.T) {
	needDevice(t)
	rt := *rdmatraceBin
	holder, _ := startHolder(t, device)
	pid := strconv.Itoa(holder.Process.Pid)

	t.Run("ps-p", func(t *testing.T) {
		var rows []struct {
			PID   int
			Files []string
		}
		out := run(t, rt, "ps", "-j", "-p", pid+",4194304")
		if err := json.Unmarshal(out, &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(rows) != 1 || rows[0].PID != holder.Process.Pid || len(rows[0].Files) == 0 {
			t.Errorf("ps -j -p %s: %s; want the holder's one row, with its /dev/infiniband files", pid, out)
		}
	})
	t.Run("ps-as-nobody", func(t *testing.T) {
		out, stderr, err := runStatus("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", rt, "ps", "-p", pid)
		lines := strings.Split(strings.TrimSuffix(string(stderr), "\n"), "\n")
		var note []string
		for _, l := range lines {
			if strings.Contains(l, "/proc/PID/fd") {
				note = append(note, l)
			}
		}
		row := regexp.MustCompile(`(?m)^` + pid + ` .* -\s*$`)
		if err != nil || len(note) != 1 || !strings.Contains(note[0], "process "+pid+" ") || !row.Match(out) {
			t.Errorf("ps -p %s as nobody: %v\nstdout:\n%s\nstderr:\n%s\nwant the row with - for files, and one line saying why", pid, err, out, stderr)
		}
	})
	t.Run("ports-tlnp", func(t *testing.T) {
		needSiw(t)
		startRping(t, "-s", "-a", siwAddr, "-p", "7510", "-C", "1")
		startRping(t, "-s", "-a", addr, "-p", "7511", "-C", "1")
		waitListening(t, "7510", "7511")
		stacks := map[string]string{}
		for _, r := range portsJSON(t, "-tlnp") {
			if r.Proto != "tcp" || r.State != "LISTEN" && r.State != "UNCONN" {
				t.Errorf("ports -tlnp row %+v: want TCP listeners only", r)
			}
			if strings.HasSuffix(r.Src, ":7510") || strings.HasSuffix(r.Src, ":7511") {
				stacks[r.Src] = r.Stack
			}
		}
		if stacks[siwAddr+":7510"] != "iwarp" || stacks[addr+":7511"] != "rdma_cm" {
			t.Errorf("ports -tlnp: rping's listeners %v; want %s:7510 iwarp and %s:7511 rdma_cm", stacks, siwAddr, addr)
		}
		for _, r := range portsJSON(t, "-uln") {
			if r.Proto != "udp" || strings.HasSuffix(r.Src, ":7510") {
				t.Errorf("ports -uln row %+v: want UDP rows only", r)
			}
		}
	})
	t.Run("trace-l", func(t *testing.T) {
		needModuleBTF(t)
		out, stderr, err := runStatus("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", rt, "trace", "-l", "rdma_restrack_*")
		if err != nil || !regexp.MustCompile(`(?m)^rdma_restrack_add +fexit +fexit:rdma_restrack_add +yes +in (ib_core|vmlinux)$`).Match(out) {
			t.Errorf("trace -l as nobody: %v\n%s\n%s\nwant rdma_restrack_add's fexit found in ib_core's BTF", err, out, stderr)
		}
		out = run(t, rt, "trace", "-l", "rdma_cma:cm_send_req")
		if !regexp.MustCompile(`(?m)^rdma_cma:cm_send_req +tp_btf +tp_btf:cm_send_req +yes +in (rdma_cm|vmlinux)$`).Match(out) {
			t.Errorf("trace -l rdma_cma:cm_send_req:\n%s\nwant its tp_btf found in rdma_cm's BTF", out)
		}
	})
	t.Run("rdma-abbreviations", func(t *testing.T) {
		for _, pair := range [][2][]string{
			{{"sys", "-j"}, {"system", "-j"}},
			{{"st", "qp", "mode", "-j"}, {"statistic", "qp", "mode", "-j"}},
			{{"l", "-j"}, {"link", "-j"}},
			{{"d", "-j"}, {"dev", "-j"}},
		} {
			if a, b := run(t, rt, pair[0]...), run(t, rt, pair[1]...); !bytes.Equal(a, b) {
				t.Errorf("%v is not %v:\n%s\n%s", pair[0], pair[1], a, b)
			}
		}
	})
	t.Run("details-tables", func(t *testing.T) {
		if out := run(t, rt, "res", "qp", "-d"); !bytes.Contains(out, []byte("RQ-PSN")) || !bytes.Contains(out, []byte("PATH-MIG-STATE")) {
			t.Errorf("res qp -d: no RQ-PSN or PATH-MIG-STATE column:\n%s", out)
		}
		if out := run(t, rt, "-d", "dev"); !bytes.Contains(out, []byte("CAPS")) || !bytes.Contains(out, []byte("ADAPTIVE-MODERATION")) {
			t.Errorf("-d dev: no CAPS or ADAPTIVE-MODERATION column:\n%s", out)
		}
	})
}

// pidSelectsTheProcessOfEveryThread: an rping client's threads create
// some of its objects (RDMA netlink names the creating thread), and `ps`
// folds them into its row. `ps -p PID` and `--filter-pid PID` select the
// same row, with the same counts, as procps' ps -p selects a process; `res
// TYPE pid PID` lists as many objects of each type, each still with its
// thread's pid (checked for the types the other threads made).
func pidSelectsTheProcessOfEveryThread(t *testing.T, w *workload) {
	rt := *rdmatraceBin
	var client *exec.Cmd
	for _, p := range w.procs {
		if len(p.Args) > 1 && p.Args[0] == "rping" && p.Args[1] == "-c" {
			client = p
		}
	}
	if client == nil {
		t.Fatal("no rping client among the workloads")
	}
	pid := uint32(client.Process.Pid)
	byThreads, types := 0, map[string]bool{} // the types its other threads made
	for _, typ := range rdma.ResourceTypes {
		rs, err := dumpable(typ)
		if err != nil { // 5.10 dumps no ctx and no srq
			t.Log(err)
			continue
		}
		for _, r := range rs {
			if r.Owner.PID != pid && threads(client)[r.Owner.PID] {
				byThreads++
				types[typ.String()] = true
			}
		}
	}
	if byThreads == 0 {
		t.Fatalf("rping %d's other threads hold nothing: the test proves nothing on this kernel", pid)
	}
	type row struct {
		PID uint32 `json:"pid"`
		resCounts
	}
	rows := func(args ...string) []row {
		t.Helper()
		var out []row
		if err := json.Unmarshal(run(t, rt, args...), &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	var want *row
	for _, r := range rows("ps", "-j") {
		if r.PID == pid {
			want = &r
		}
	}
	if want == nil {
		t.Fatalf("ps -j has no row for rping %d", pid)
	}
	p := strconv.Itoa(int(pid))
	for _, args := range [][]string{{"ps", "-j", "-p", p}, {"ps", "-j", "--filter-pid", p}} {
		if got := rows(args...); len(got) != 1 || mustJSON(got[0]) != mustJSON(*want) {
			t.Errorf("%v: %s; want ps's row %s (%d objects made by its other threads)", args, mustJSON(got), mustJSON(*want), byThreads)
		}
	}
	for typ := range types {
		n, _ := want.count(typ)
		var objs []owned
		if err := json.Unmarshal(run(t, rt, "res", typ, "pid", p, "-j"), &objs); err != nil {
			t.Fatal(err)
		}
		if len(objs) != int(n) {
			t.Errorf("res %s pid %s: %d objects, ps counts %v", typ, p, len(objs), n)
		}
		for _, o := range objs {
			if o.PID == nil || !threads(client)[*o.PID] {
				t.Errorf("res %s pid %s listed %s, not a thread of %s", typ, p, mustJSON(o), p)
			}
		}
	}
	t.Logf("rping %d: %d objects made by its other threads, selected by -p %d", pid, byThreads, pid)
}
