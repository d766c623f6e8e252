//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// whyPort is a port nobody listens on in the guest.
const whyPort = "7931"

// failedClient is an rping client that failed, with what it printed.
type failedClient struct {
	pid    int
	stderr string
}

// rpingFails runs an rping client that must fail and returns its pid and
// what it printed.
func rpingFails(t *testing.T, args ...string) failedClient {
	t.Helper()
	cmd := exec.Command("rping", append([]string{"-c", "-C", "1", "-p", whyPort}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err == nil {
		t.Fatalf("rping %v succeeded: %s", args, out.String())
	}
	return failedClient{pid: cmd.Process.Pid, stderr: out.String()}
}

// TestWhyNamesConnectFailuresInWords: rping clients fail as on call one
// sees them (a port nobody listens on, an address no one answers ARP
// for, an address no route reaches); the trace says each failure in
// words beside what rping printed, `why --pid` of each client lists its
// own, and the exporter's failure counter moves. One trace and one
// exporter serve the three cases.
func TestWhyNamesConnectFailuresInWords(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	ready := filepath.Join(t.TempDir(), "ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	var expErr strings.Builder
	exp.Stderr = &expErr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Process.Signal(syscall.SIGINT); _ = exp.Wait() }()
	tr := startTrace(t, "--no-snapshot", "comm", "rping")
	// why live, beside the trace: the same words as it happens.
	whyReady := filepath.Join(t.TempDir(), "why-ready")
	live := exec.Command(*rdmatraceBin, "why", "--comm", "rping", "-j", "--ready-file", whyReady)
	var liveOut, liveErr bytes.Buffer
	live.Stdout, live.Stderr = &liveOut, &liveErr
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "rdmatrace why to attach", func() bool {
		_, err := os.Stat(whyReady)
		return err == nil || live.ProcessState != nil
	})
	waitFor(t, 60*time.Second, "the exporter to serve", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	b, _ := os.ReadFile(ready)
	metrics := strings.TrimSpace(string(b))
	before := scrape(t, metrics)

	refused := rpingFails(t, "-a", addr)            // IB CM REJ: invalid service ID
	unanswered := rpingFails(t, "-a", "10.99.0.77") // on the veth's subnet: ARP gets no answer
	unrouted := rpingFails(t, "-a", "10.200.0.1")   // no route: rdma_resolve_addr fails in the call, its own event
	for _, c := range []struct {
		what string
		cl   failedClient
		want string
	}{
		{"refused", refused, "cma event RDMA_CM_EVENT_REJECTED, error 8"},
		{"unanswered", unanswered, "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110"},
		{"unrouted", unrouted, "rdma_resolve_addr: Network is unreachable"},
	} {
		if !strings.Contains(c.cl.stderr, c.want) {
			t.Errorf("rping (%s) printed %q, want %q in it", c.what, c.cl.stderr, c.want)
		}
	}
	evs := tr.stop()
	_ = live.Process.Signal(syscall.SIGINT)
	if err := live.Wait(); err != nil {
		t.Errorf("rdmatrace why (live): %v\n%s", err, liveErr.String())
	}
	keep(t, "why/live.ndjson", liveOut.Bytes())
	for _, want := range []string{
		`"what":"REJECTED"`, `"pid":` + strconv.Itoa(refused.pid), `"peer":"` + addr + ":" + whyPort + `"`,
		`"what":"ADDR_ERROR"`, `"what":"cm-call-failed"`,
		`rdma_resolve_addr to 10.200.0.1 failed (ENETUNREACH): no route to 10.200.0.1 from any RDMA device`,
	} {
		if !strings.Contains(liveOut.String(), want) {
			t.Errorf("why (live) lacks %s:\n%s", want, liveOut.String())
		}
	}

	// The trace's words, for the event rping reported, with its status.
	var rec bytes.Buffer
	whyOf := map[string]string{}
	for _, e := range evs {
		rec.WriteString(e.line + "\n")
		if e.Kind != rdma.EvCMEventHandler {
			continue
		}
		var w struct{ Why string }
		_ = json.Unmarshal([]byte(e.line), &w)
		key := strconv.Itoa(int(e.Owner.PID)) + " " + e.CMEvent.String() + " " + strconv.Itoa(int(e.Status))
		whyOf[key] = w.Why
	}
	for _, c := range []struct {
		cl        failedClient
		event     string
		status    int
		wantWords string
	}{
		{refused, "REJECTED", 8, "no listener on port " + whyPort + " at " + addr + " from " + device + "/1 (invalid service ID)"},
		{unanswered, "ADDR_ERROR", -110, "no answer for 10.99.0.77:" + whyPort + ": address resolution timed out"},
	} {
		key := strconv.Itoa(c.cl.pid) + " " + c.event + " " + strconv.Itoa(c.status)
		got, ok := whyOf[key]
		if !ok {
			t.Errorf("no %s status %d delivered to rping[%d] in the trace; it has %v", c.event, c.status, c.cl.pid, whyOf)
			continue
		}
		if !strings.Contains(got, c.wantWords) {
			t.Errorf("rping[%d] %s: why %q, want %q in it", c.cl.pid, c.event, got, c.wantWords)
		}
	}

	// why --pid of each client lists its failure, and only its own.
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(path, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cl   failedClient
		what string
		peer string
	}{
		{refused, "REJECTED", addr + ":" + whyPort},
		{unanswered, "ADDR_ERROR", "10.99.0.77:" + whyPort},
		{unrouted, "cm-call-failed", "10.200.0.1:" + whyPort},
	} {
		out := run(t, *rdmatraceBin, "why", "-r", path, "--pid", strconv.Itoa(c.cl.pid), "-j")
		keep(t, "why/"+c.what+".ndjson", out)
		var lines []struct {
			What, Peer, Why string
			PID             int `json:"pid"`
		}
		for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var w struct {
				What, Peer, Why string
				PID             int `json:"pid"`
			}
			if err := json.Unmarshal(l, &w); err != nil {
				t.Fatalf("why -j line %q: %v", l, err)
			}
			lines = append(lines, w)
		}
		found := false
		for _, l := range lines {
			if l.PID != c.cl.pid {
				t.Errorf("why --pid %d lists pid %d: %+v", c.cl.pid, l.PID, l)
			}
			found = found || l.What == c.what && l.Peer == c.peer && l.Why != ""
		}
		if !found {
			t.Errorf("why --pid %d: no %s with peer %s in %s", c.cl.pid, c.what, c.peer, out)
		}
	}
	human := run(t, *rdmatraceBin, "why", "-r", path, "--pid", strconv.Itoa(refused.pid))
	if !strings.Contains(string(human), "REJECTED: no listener on port "+whyPort) {
		t.Errorf("why --pid %d:\n%s", refused.pid, human)
	}

	// The exporter counted them.
	rejected := "rdma_failures_total{comm=rping,container=,device=" + device + ",event=REJECTED,port=1,uid=0}"
	addrErr := "rdma_failures_total{comm=rping,container=,device=,event=ADDR_ERROR,port=,uid=0}"
	var after map[string]float64
	counted := func() bool {
		after = scrape(t, metrics)
		return after[rejected] >= before[rejected]+1 && after[addrErr] >= before[addrErr]+1
	}
	for deadline := time.Now().Add(20 * time.Second); !counted(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			var seen []string
			for k, v := range after {
				if strings.HasPrefix(k, "rdma_failures_total") || strings.HasPrefix(k, "rdma_tracer") {
					seen = append(seen, fmt.Sprintf("%s %v", k, v))
				}
			}
			sort.Strings(seen)
			t.Fatalf("waited 20s for the exporter to count %s and %s; it has:\n%s\nexporter: %s",
				rejected, addrErr, strings.Join(seen, "\n"), expErr.String())
		}
	}
	t.Logf("%s %v, %s %v; exporter: %s", rejected, after[rejected], addrErr, after[addrErr], strings.TrimSpace(expErr.String()))
}
