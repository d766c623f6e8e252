//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// tracing runs `rdmatrace trace -j` in the background.
type tracing struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    bytes.Buffer
	stderr bytes.Buffer
}

func startTrace(t *testing.T, args ...string) *tracing {
	t.Helper()
	needModuleBTF(t)
	ready := filepath.Join(t.TempDir(), "ready")
	tr := &tracing{t: t}
	tr.cmd = exec.Command(*rdmatraceBin, append([]string{"trace", "-j", "--ready-file", ready}, args...)...)
	tr.cmd.Stdout, tr.cmd.Stderr = &tr.out, &tr.stderr
	if err := tr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "rdmatrace trace to attach", func() bool {
		_, err := os.Stat(ready)
		return err == nil || tr.cmd.ProcessState != nil
	})
	return tr
}

// stop ends the trace with SIGINT and returns its events.
func (tr *tracing) stop() []map[string]any {
	tr.t.Helper()
	_ = tr.cmd.Process.Signal(syscall.SIGINT)
	if err := tr.cmd.Wait(); err != nil {
		tr.t.Fatalf("rdmatrace trace: %v\n%s", err, tr.stderr.String())
	}
	keep(tr.t, "trace/"+strings.ReplaceAll(tr.t.Name(), "/", "_")+".ndjson", tr.out.Bytes())
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(tr.out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tr.t.Fatalf("trace -j line %q: %v", sc.Text(), err)
		}
		evs = append(evs, m)
	}
	return evs
}

func str(v any) string { return fmt.Sprint(v) }

// TestTraceSeesEveryResourceWithItsOwner checks, on rping, ib_write_lat -R
// and ibv_rc_pingpong pairs, that every QP and CM_ID that `rdma res`
// lists mid-run has a create event with the same device, lqpn or id, pid
// and comm; that QPs are seen reaching RTS; that after the workloads are
// killed each has a destroy event; that a device added while tracing has
// its GSI QP owned by ib_core; and that nothing was dropped.
func TestTraceSeesEveryResourceWithItsOwner(t *testing.T) {
	for _, mode := range []string{"btf", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			needDevice(t)
			var args []string
			if mode == "fallback" {
				args = append(args, "--fallback")
			}
			tr := startTrace(t, args...)
			w := startAll(t)
			w.signal(syscall.SIGSTOP)
			var qps, ids []map[string]any
			_ = json.Unmarshal(run(t, "rdma", "-j", "res", "show", "qp"), &qps)
			_ = json.Unmarshal(run(t, "rdma", "-j", "res", "show", "cm_id"), &ids)
			w.stop()
			// A device added while tracing: its GSI QP belongs to ib_core.
			run(t, "rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "veth1")
			run(t, "rdma", "link", "delete", "rxe9")
			// The kernel may hold a killed program's connected cm_ids for
			// a while (on sid's 7.2, two of ib_write_lat's had no
			// restrack deletion 1 s after their cm_id_destroy): wait
			// until rdma res no longer lists them, then let their
			// destroys arrive.
			waitFor(t, 90*time.Second, "the killed programs' QPs and CM_IDs to leave rdma res", func() bool {
				return len(userObjects(t, rdma.ResQP))+len(userObjects(t, rdma.ResCMID)) == 0
			})
			time.Sleep(time.Second)
			evs := tr.stop()
			if !strings.Contains(tr.stderr.String(), " 0 dropped") {
				t.Errorf("events were dropped at this load:\n%s", tr.stderr.String())
			}
			if mode == "fallback" && !strings.Contains(tr.stderr.String(), "rdma_restrack_add (kprobe+kretprobe") {
				t.Errorf("--fallback did not use kprobes:\n%s", tr.stderr.String())
			}
			// 14 RC QPs (startAll); rping's 3 IDs and ib_write_lat's.
			checkResources(t, evs, qps, "qp", "lqpn", 14)
			checkResources(t, evs, ids, "cm_id", "cm-idn", 5)
			checkGSI(t, evs, "rxe9")
		})
	}
}

// userObjects lists the objects of a type that belong to a process.
func userObjects(t *testing.T, typ rdma.ResType) []rdma.Resource {
	t.Helper()
	var out []rdma.Resource
	for _, r := range snapshot(t, typ) {
		if r.Has&rdma.HasPID != 0 {
			out = append(out, r)
		}
	}
	return out
}

// checkResources matches objects of `rdma -j res show TYPE` to the trace.
func checkResources(t *testing.T, evs []map[string]any, objs []map[string]any, res, idKey string, atLeast int) {
	t.Helper()
	checked := 0
	for _, o := range objs {
		if o["pid"] == nil {
			continue // kernel objects that existed before tracing
		}
		checked++
		evKey := "id"
		if res == "qp" {
			evKey = "lqpn"
		}
		same := func(e map[string]any) bool {
			return e["res"] == res && e["ifname"] == o["ifname"] && str(e[evKey]) == str(o[idKey])
		}
		var created, destroyed bool
		states := map[string]bool{}
		last := "RESET" // QPs are created in RESET
		for _, e := range evs {
			if !same(e) {
				continue
			}
			switch e["event"] {
			case "create":
				created = true
				if str(e["pid"]) != str(o["pid"]) || e["comm"] != o["comm"] {
					t.Errorf("%s %s=%v: created by pid %v comm %v, rdma res says pid %v comm %v", res, idKey, o[idKey], e["pid"], e["comm"], o["pid"], o["comm"])
				}
			case "destroy":
				destroyed = true
			case "modify":
				states[str(e["state"])] = true
				last = str(e["state"])
			}
		}
		if !created {
			t.Errorf("%s %s=%v (pid %v %v) has no create event", res, idKey, o[idKey], o["pid"], o["comm"])
		}
		if !destroyed {
			t.Errorf("%s %s=%v (pid %v %v) has no destroy event after its program was killed", res, idKey, o[idKey], o["pid"], o["comm"])
		}
		// Not every QP reaches RTS (a CI run met an RC QP with no
		// transition traced, and did not record its state): the trace must
		// end in the state rdma res shows, and RTS must come after INIT and RTR.
		if res == "qp" && last != o["state"] {
			t.Errorf("qp %v (%v %v): last state traced %s, rdma res says %v (transitions seen %v)", o[idKey], o["pid"], o["comm"], last, o["state"], states)
		}
		if res == "qp" && o["state"] == "RTS" && o["type"] == "RC" && !(states["INIT"] && states["RTR"]) {
			t.Errorf("qp %v (%v %v) is in RTS, but transitions seen are %v, want INIT and RTR before", o[idKey], o["pid"], o["comm"], states)
		}
	}
	if checked < atLeast {
		t.Errorf("only %d user %s objects in rdma res mid-run", checked, res)
	}
}

func checkGSI(t *testing.T, evs []map[string]any, dev string) {
	t.Helper()
	for _, e := range evs {
		if e["event"] == "create" && e["res"] == "qp" && e["ifname"] == dev && e["type"] == "GSI" {
			if e["kern-name"] != "ib_core" || e["pid"] != nil {
				t.Errorf("GSI QP of %s: kern-name %v pid %v, want ib_core and no pid", dev, e["kern-name"], e["pid"])
			}
			return
		}
	}
	t.Errorf("no create event for the GSI QP of %s, added while tracing", dev)
}

// TestTraceLeavesNothingAttached kills rdmatrace trace with SIGKILL and
// checks that none of its programs stay loaded.
func TestTraceLeavesNothingAttached(t *testing.T) {
	needDevice(t)
	tr := startTrace(t)
	progs := string(run(t, "bpftool", "prog", "show"))
	// fexit_restrack_add, or kretprobe_restrack_add on a preemptible kernel.
	if !strings.Contains(progs, "restrack") {
		t.Fatalf("rdmatrace's programs are not listed by bpftool while it runs:\n%s", progs)
	}
	_ = tr.cmd.Process.Kill()
	_ = tr.cmd.Wait()
	waitFor(t, 10*time.Second, "the programs to go away", func() bool {
		return !bytes.Contains(run(t, "bpftool", "prog", "show"), []byte("restrack"))
	})
}

// TestTraceWithoutPrivilegesNamesThem runs trace as nobody.
func TestTraceWithoutPrivilegesNamesThem(t *testing.T) {
	needDevice(t)
	_, stderr, err := runStatus("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		"--bounding-set=-all", *rdmatraceBin, "trace", "--duration", "1s")
	if err == nil {
		t.Fatal("rdmatrace trace succeeded without privileges")
	}
	if !bytes.Contains(stderr, []byte("CAP_BPF")) || !bytes.Contains(stderr, []byte("CAP_PERFMON")) {
		t.Errorf("the error does not name the capabilities:\n%s", stderr)
	}
}
