//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fault is one class of the corpus: a fault made on purpose, the
// processes that met it, and what `why` must say of it.
type fault struct {
	group, name string
	made        string // how the test made it, for the table
	pids        []int  // whose why lines these are; none: a port's or device's line, found by ifname
	ifname      string // the ownerless line's device
	what        string // why's What
	want        string // a regular expression the sentence must match
	// trace, when set, is a kind of event the trace must have instead
	// (what is news, not a failure: why says nothing of it).
	trace func(evs []traced) (string, bool)
}

// clean is a workload that must meet no failure and no warning.
type clean struct {
	name string
	pids []int
}

// whyLine is a line of `why -j`.
type whyLine struct {
	What, Severity, Why, Peer, Ifname string
	PID                               int `json:"pid"`
	TGID                              int `json:"tgid"`
}

func (l whyLine) process() int { return max(l.TGID, l.PID) }

// TestFaultCorpus makes each fault class the failure stream names happen
// once, under one trace, one live `why` and one exporter, and runs the
// clean workloads beside them; then, for each class, `why` of the
// recording and `why` live say the sentence given for the processes that
// met it (an ownerless port's or device's line by its device), the
// exporter counted it, and each clean workload's processes have no line
// at all (no failure, no warning). It leaves the "fault → what why says"
// table docs/trace.md carries (guest/corpus-table.sh splices it in).
//
// Classes: transport (RNR, bad rkey, bad lkey, an MR deregistered under
// traffic, a CQ overrun, an SRQ drained past its limit, packets dropped on
// UDP 4791), process (a peer killed), rdma_cm (no listener, a reject with
// private data, no route, no answer to ARP), limits (the rdma cgroup's
// hca_object and hca_handle, RLIMIT_MEMLOCK, the device's max_cqe,
// max_qp_wr, max_sge), device and port (a GID added and removed, a port
// flap, a device removed under an rping pair, its netdev moved to another
// namespace).
func TestFaultCorpus(t *testing.T) {
	needFullTier(t)
	needDevice(t)
	needModuleBTF(t)
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	// verbsfail where an unprivileged user can run it, and the uverbs
	// device open to it (the guest's /dev is its own).
	verbsfail := filepath.Join(t.TempDir(), "verbsfail")
	data, err := os.ReadFile(filepath.Join(*workloads, "verbsfail"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(verbsfail, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(verbsfail), 0o755)
	uverbs, _ := filepath.Glob("/dev/infiniband/uverbs*")
	for _, u := range uverbs {
		os.Chmod(u, 0o666)
	}
	faultsBin := filepath.Join(*workloads, "faults")
	cg := rdmaCgroup(t, mount, "rdmatrace-corpus")

	// The exporter and the trace attach side by side, then why live
	// (three tracers loading at once took more than a minute on 6.1).
	ready := filepath.Join(t.TempDir(), "exporter-ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready)
	var expErr strings.Builder
	exp.Stderr = &expErr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Process.Signal(syscall.SIGINT); _ = exp.Wait() }()
	start := time.Now()
	tr := startTrace(t, "--no-snapshot")
	whyReady := filepath.Join(t.TempDir(), "why-ready")
	live := exec.Command(*rdmatraceBin, "why", "-j", "--ready-file", whyReady)
	var liveOut, liveErr bytes.Buffer
	live.Stdout, live.Stderr = &liveOut, &liveErr
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill() }()
	waitFor(t, 90*time.Second, "rdmatrace why to attach", func() bool {
		_, err := os.Stat(whyReady)
		return err == nil || live.ProcessState != nil
	})
	waitFor(t, 90*time.Second, "the exporter to serve", func() bool { _, err := os.Stat(ready); return err == nil })
	b, _ := os.ReadFile(ready)
	metrics := strings.TrimSpace(string(b))
	before := failuresByEvent(scrape(t, metrics))
	t.Logf("trace, why and the exporter attached in %v", time.Since(start).Round(time.Millisecond))

	var faults []fault
	add := func(f fault) { faults = append(faults, f) }
	qpErr := func(status, words string) string {
		return `^first error completion ` + status + ` \(` + words + `\): `
	}

	// Transport, on faults' own RC pairs over rxe0.
	for _, c := range []struct{ arg, name, made, what, want string }{
		{"rnr", "RNR retries exhausted", "a send to a QP with no receive posted, rnr_retry 0", "qp-error",
			qpErr("RNR_RETRY_EXC_ERR", "RNR retry counter exceeded") + `the peer posted no receive in time: RNR retries exhausted; peer ` + addr + ` QP \d+$`},
		{"rkey", "bad rkey", "an RDMA write with a wrong rkey", "qp-error",
			qpErr("REM_ACCESS_ERR", "remote access error") + `the peer refused an RDMA access \(rkey, rights or bounds\); peer ` + addr + ` QP \d+$`},
		{"lkey", "bad lkey", "an RDMA read into a buffer given a wrong lkey", "qp-error",
			qpErr("LOC_PROT_ERR", "local protection error") + `a local buffer outside its MR, or a wrong lkey; peer ` + addr + ` QP \d+$`},
		{"dereg", "MR deregistered under traffic", "RDMA writes to an MR, the MR deregistered, one more write", "qp-error",
			qpErr("REM_ACCESS_ERR", "remote access error") + `the peer refused an RDMA access`},
		{"cqoverrun", "CQ overrun", "four completions on a CQ of one entry, none polled", "CQ_ERR",
			`^CQ error: the CQ overran \(more completions than entries\) or failed; its QPs go to ERR$`},
		{"srqlimit", "SRQ drained past its limit", "an SRQ armed with srq_limit 2 and drained by sends, rnr_retry 0", "qp-error",
			qpErr("RNR_RETRY_EXC_ERR", "RNR retry counter exceeded") + `the peer posted no receive in time`},
	} {
		out, pid := runFaults(t, faultsBin, device, c.arg)
		f := fault{group: "transport", name: c.name, made: c.made, pids: []int{pid}, what: c.what, want: c.want}
		if c.arg == "srqlimit" {
			f.made += " (the SRQ_LIMIT_REACHED it raises is in the trace: news, not a failure)"
			f.trace = func(evs []traced) (string, bool) {
				e := findEvent(evs, func(e *traced) bool {
					return e.Kind == rdma.EvAsync && e.process() == strconv.Itoa(pid) && e.Fault.IBEvent.String() == "SRQ_LIMIT_REACHED"
				})
				if e == nil {
					return "no SRQ_LIMIT_REACHED of faults[" + strconv.Itoa(pid) + "] in the trace; the program said:\n" + out, false
				}
				return "", true
			}
		}
		add(f)
	}
	// Packets dropped on UDP 4791: a QP whose peer's address has a
	// neighbour entry and whose packets to it are dropped leaving veth0.
	const lostPeer = "10.99.0.78"
	run(t, "ip", "neigh", "replace", lostPeer, "lladdr", "02:00:00:00:00:78", "dev", "veth0")
	run(t, "tc", "qdisc", "add", "dev", "veth0", "root", "handle", "1:", "prio")
	run(t, "tc", "filter", "add", "dev", "veth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
		"match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff", "action", "drop")
	_, retryPid := runFaults(t, faultsBin, device, "retry", lostPeer)
	_, _, _ = runStatus("tc", "qdisc", "del", "dev", "veth0", "root")
	_, _, _ = runStatus("ip", "neigh", "del", lostPeer, "dev", "veth0")
	add(fault{group: "transport", name: "packets dropped on UDP 4791", made: "a send to QP 1234 at " + lostPeer + ", UDP 4791 dropped leaving veth0 (timeout 10, retry_cnt 1)",
		pids: []int{retryPid}, what: "qp-error",
		want: qpErr("RETRY_EXC_ERR", "transport retry counter exceeded") + `the peer stopped answering: transport retries exhausted \(peer dead or unreachable, or its QP gone\); peer ` + lostPeer + ` QP 1234$`})

	// A process killed: the target of an RDMA-writing peer SIGKILLed; the
	// writer meets it.
	writer := killedPeer(t, faultsBin)
	add(fault{group: "process", name: "peer killed", made: "the target of a peer's RDMA writes (another process) SIGKILLed; the writer's line",
		pids: []int{writer}, what: "qp-error",
		want: qpErr("RETRY_EXC_ERR", "transport retry counter exceeded") + `the peer stopped answering: transport retries exhausted \(peer dead or unreachable, or its QP gone\); peer ` + addr + ` QP \d+$`})

	// rdma_cm.
	refused := rpingFails(t, "-a", addr)
	add(fault{group: "rdma_cm", name: "no listener", made: "rping -c to a port nobody listens on",
		pids: []int{refused.pid}, what: "REJECTED",
		want: `^no listener on port ` + whyPort + ` at ` + addr + ` from ` + device + `/1 \(invalid service ID\)$`})
	rejecter := exec.Command(faultsBin, "reject", addr, "7952")
	rejOut, _ := rejecter.StdoutPipe()
	if err := rejecter.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rejecter.Process.Kill(); _ = rejecter.Wait() }()
	if l, err := bufio.NewReader(rejOut).ReadString('\n'); err != nil || l != "listening\n" {
		t.Fatalf("faults reject: %q, %v", l, err)
	}
	rejected := rpingFailsOn(t, "7952", "-a", addr)
	add(fault{group: "rdma_cm", name: "reject with private data", made: "rdma_reject with 16 bytes of private data by the listener",
		pids: []int{rejected.pid}, what: "REJECTED",
		want: `^peer ` + addr + `:7952 rejected the connection: consumer defined \(its program or its rdma_cm refused it\) from ` + device + `/1$`})
	unrouted := rpingFails(t, "-a", "10.200.0.1")
	add(fault{group: "rdma_cm", name: "no route", made: "rping -c to an address no route reaches",
		pids: []int{unrouted.pid}, what: "cm-call-failed",
		want: `^rdma_resolve_addr to 10\.200\.0\.1 failed \(ENETUNREACH\): no route to 10\.200\.0\.1 from any RDMA device$`})
	unanswered := rpingFails(t, "-a", "10.99.0.77")
	add(fault{group: "rdma_cm", name: "address resolution timed out", made: "rping -c to an address on rxe0's subnet no one answers ARP for",
		pids: []int{unanswered.pid}, what: "ADDR_ERROR",
		want: `^no answer for 10\.99\.0\.77:` + whyPort + `: address resolution timed out \(no neighbour answered ARP/ND, or no route came up\)$`})
	for _, c := range []struct {
		cl   failedClient
		want string
	}{
		{refused, "cma event RDMA_CM_EVENT_REJECTED, error 8"},
		{rejected, "cma event RDMA_CM_EVENT_REJECTED, error 28"},
		{unanswered, "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110"},
		{unrouted, "rdma_resolve_addr: Network is unreachable"},
	} {
		if !strings.Contains(c.cl.stderr, c.want) {
			t.Errorf("rping[%d] printed %q, want %q in it", c.cl.pid, c.cl.stderr, c.want)
		}
	}

	// Limits.
	refusals := map[int]refusal{}
	limit := func(name, made string, wrap []string, args []string, want func(r refusal) string) {
		r := refuse(t, append(wrap, verbsfail), append([]string{device}, args...)...)
		refusals[r.pid] = r
		add(fault{group: "limits", name: name, made: made, pids: []int{r.pid}, what: "create-failed", want: "^" + regexp.QuoteMeta(want(r))})
	}
	limit("device's max_cqe", "ibv_create_cq with max_cqe+1 entries", nil, []string{"cq"}, func(r refusal) string {
		return fmt.Sprintf("create_cq failed (EINVAL): cqe %d > %s's max_cqe %d", r.asked, device, r.limit)
	})
	limit("device's max_qp_wr", "ibv_create_qp with max_qp_wr+1 send WRs", nil, []string{"qp"}, func(r refusal) string {
		return fmt.Sprintf("create_qp failed (EINVAL): max_send_wr %d > %s's max_qp_wr %d", r.asked, device, r.limit)
	})
	limit("device's max_sge", "ibv_create_qp with max_sge+1 send SGEs", nil, []string{"sge"}, func(r refusal) string {
		return fmt.Sprintf("create_qp failed (EINVAL): max_send_sge %d > %s's max_send_sge %d", r.asked, device, r.limit)
	})
	limit("RLIMIT_MEMLOCK", "an unprivileged ibv_reg_mr of 1 MiB under ulimit -l 64",
		[]string{"prlimit", "--memlock=65536", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, []string{"mr", "1048576"},
		func(refusal) string { return "reg_mr of 1 MiB failed (ENOMEM): RLIMIT_MEMLOCK 64 KiB, " })
	inCgroup := []string{"sh", "-c", `echo $$ > "$0"/cgroup.procs && exec "$@"`, cg}
	setMax(t, cg, device+" hca_object=8")
	limit("rdma cgroup's hca_object", "PDs, CQs and MRs in an rdma cgroup with hca_object=8", inCgroup, []string{"objects", "20"}, func(r refusal) string {
		return r.op + " failed (EAGAIN): rdma cgroup /rdmatrace-corpus's rdma.max hca_object=8, 8 in use on " + device
	})
	setMax(t, cg, device+" hca_handle=0 hca_object=max")
	limit("rdma cgroup's hca_handle", "ibv_open_device in an rdma cgroup with hca_handle=0", inCgroup, []string{"cq"}, func(r refusal) string {
		return "get_context failed (EAGAIN): rdma cgroup /rdmatrace-corpus's rdma.max hca_handle=0, 0 in use on " + device
	})
	setMax(t, cg, device+" hca_handle=max hca_object=max")

	// The clean workloads.
	cleans := cleanWorkloads(t)

	// Device and port, last: they change rxe0's port and GID table, and
	// make and remove a second device.
	gidAdd, gidDel := changeGID(t)
	gidEvent := func(added bool, ip string) func(evs []traced) (string, bool) {
		return func(evs []traced) (string, bool) {
			e := findEvent(evs, func(e *traced) bool {
				return e.Kind == rdma.EvGIDChange && e.GID.Added == added && e.GID.GID.Unmap().String() == ip
			})
			if e == nil {
				return fmt.Sprintf("no gid-change (added %v) of %s in the trace", added, ip), false
			}
			if e.DevName != device || e.Port != 1 || e.GID.Netdev != "veth0" || e.GID.Type.Name(true) != "RoCE v2" && e.GID.Type.Name(true) != "RoCE v1" {
				return "gid-change: " + e.line + ", want " + device + "/1 on veth0", false
			}
			return "", true
		}
	}
	add(fault{group: "device and port", name: "GID added", made: "ip addr add " + gidAdd + " on rxe0's netdev", trace: gidEvent(true, gidAdd)})
	add(fault{group: "device and port", name: "GID removed", made: "ip addr del " + gidDel + " on rxe0's netdev", trace: gidEvent(false, gidDel)})
	flap(t)
	add(fault{group: "device and port", name: "port flap", made: "ip link set veth0 down, then up",
		ifname: device, what: "PORT_ERR", want: `^port error: the port went down \(link, cable or net device\); its connections stop until it is back$`})
	removed, moved := removeDevices(t)
	add(fault{group: "device and port", name: "device removed", made: "rdma link delete rxe1 under a connected rping pair",
		pids: removed, what: "DEVICE_REMOVAL", want: `^device rxe1/1 is being removed: the ID must be destroyed$`})
	add(fault{group: "device and port", name: "netdev moved to another namespace", made: "ip link set NETDEV netns NS under an rping listener on rxe1: rxe unregisters the device",
		pids: moved, what: "DEVICE_REMOVAL", want: `^device rxe1/1 is being removed: the ID must be destroyed$`})

	evs := tr.stop()
	_ = live.Process.Signal(syscall.SIGINT)
	if err := live.Wait(); err != nil {
		t.Errorf("rdmatrace why (live): %v\n%s", err, liveErr.String())
	}
	keep(t, "corpus/why-live.ndjson", liveOut.Bytes())
	var rec bytes.Buffer
	for _, e := range evs {
		rec.WriteString(e.line + "\n")
	}
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(path, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	post := run(t, *rdmatraceBin, "why", "-r", path, "-j")
	keep(t, "corpus/why.ndjson", post)
	postLines, liveLines := whyLines(t, post), whyLines(t, liveOut.Bytes())

	said := map[string]string{} // fault name: the sentence
	for _, f := range faults {
		t.Run(f.group+"/"+f.name, func(t *testing.T) {
			if f.trace != nil {
				if msg, ok := f.trace(evs); !ok {
					t.Error(msg)
				}
			}
			if f.what == "" {
				return
			}
			got := checkFault(t, "why -r", postLines, f)
			said[f.name] = got
			if liveGot := checkFault(t, "why (live)", liveLines, f); got != "" && liveGot != got {
				t.Errorf("why (live) says %q, why -r %q", liveGot, got)
			}
		})
	}
	for _, c := range cleans {
		t.Run("clean/"+c.name, func(t *testing.T) {
			for src, lines := range map[string][]whyLine{"why -r": postLines, "why (live)": liveLines} {
				for _, l := range lines {
					if slices.Contains(c.pids, l.process()) {
						t.Errorf("%s lists %s (%v), which ended normally: %s: %s", src, c.name, c.pids, l.What, l.Why)
					}
				}
			}
		})
	}
	t.Run("call-fail events", func(t *testing.T) { checkRefusals(t, evs, refusals) })
	t.Run("the trace's words and why --pid", func(t *testing.T) {
		// The trace says the rdma_cm failure in words on the event
		// delivered to the program.
		for _, c := range []struct {
			cl    failedClient
			event string
			words string
		}{
			{refused, "REJECTED", "no listener on port " + whyPort + " at " + addr + " from " + device + "/1 (invalid service ID)"},
			{unanswered, "ADDR_ERROR", "no answer for 10.99.0.77:" + whyPort + ": address resolution timed out"},
		} {
			e := findEvent(evs, func(e *traced) bool {
				return e.Kind == rdma.EvCMEventHandler && e.process() == strconv.Itoa(c.cl.pid) && e.CMEvent.String() == c.event
			})
			var w struct{ Why string }
			if e != nil {
				_ = json.Unmarshal([]byte(e.line), &w)
			}
			if !strings.Contains(w.Why, c.words) {
				t.Errorf("rping[%d]'s %s in the trace: %v; want %q in its why", c.cl.pid, c.event, e, c.words)
			}
		}
		// --pid lists that process's lines only, in the human view too.
		pid := strconv.Itoa(refused.pid)
		for _, l := range whyLines(t, run(t, *rdmatraceBin, "why", "-r", path, "--pid", pid, "-j")) {
			if l.process() != refused.pid {
				t.Errorf("why --pid %s lists pid %d: %+v", pid, l.process(), l)
			}
		}
		if human := run(t, *rdmatraceBin, "why", "-r", path, "--pid", pid); !bytes.Contains(human, []byte("REJECTED: no listener on port "+whyPort)) {
			t.Errorf("why --pid %s:\n%s", pid, human)
		}
	})
	t.Run("the exporter counted each", func(t *testing.T) {
		want := map[string]int{}
		for _, f := range faults {
			if f.what != "" {
				want[f.what]++
			}
		}
		var after map[string]float64
		counted := func() bool {
			after = failuresByEvent(scrape(t, metrics))
			for what := range want {
				if after[what] < before[what]+1 {
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(20 * time.Second); !counted(); time.Sleep(250 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s, rdma_failures_total by event: %v (before: %v); want one more of each of %v\nexporter: %s", after, before, want, expErr.String())
			}
		}
	})
	keep(t, "corpus/faults.md", corpusTable(faults, cleans, said, release(t)))
}

// checkFault finds f's line among lines and checks its sentence; it
// returns the sentence.
func checkFault(t *testing.T, src string, lines []whyLine, f fault) string {
	t.Helper()
	want := regexp.MustCompile(f.want)
	var mine []string
	for _, l := range lines {
		ours := f.pids == nil && l.Ifname == f.ifname || f.pids != nil && slices.Contains(f.pids, l.process())
		if !ours {
			continue
		}
		if l.What == f.what && want.MatchString(l.Why) {
			return l.Why
		}
		mine = append(mine, l.What+": "+l.Why)
	}
	t.Errorf("%s: no %s line matching %s for %v%s; its lines:\n%s", src, f.what, f.want, f.pids, f.ifname, strings.Join(mine, "\n"))
	return ""
}

func whyLines(t *testing.T, out []byte) []whyLine {
	t.Helper()
	var lines []whyLine
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var w whyLine
		if err := json.Unmarshal(l, &w); err != nil {
			t.Fatalf("why -j line %q: %v", l, err)
		}
		lines = append(lines, w)
	}
	return lines
}

var eventLabel = regexp.MustCompile(`[{,]event=([^,}]*)`)

// failuresByEvent sums rdma_failures_total by its event label.
func failuresByEvent(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if !strings.HasPrefix(k, "rdma_failures_total{") {
			continue
		}
		if e := eventLabel.FindStringSubmatch(k); e != nil {
			out[e[1]] += v
		}
	}
	return out
}

// runFaults runs the faults workload, which must succeed in making its
// fault, and returns what it printed and its pid.
func runFaults(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("faults %v: %v\n%s", args, err, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("faults %v: still running after 30 s\n%s", args, out.String())
	}
	return out.String(), cmd.Process.Pid
}

// killedPeer runs the two halves of faults' pair across two processes,
// the writer and its target, connects them, SIGKILLs the target once the
// writer has written for a moment, and returns the writer's pid once its
// write failed.
func killedPeer(t *testing.T, bin string) int {
	t.Helper()
	type half struct {
		cmd  *exec.Cmd
		in   io.WriteCloser
		out  *bufio.Reader
		line string
	}
	start := func(role string) *half {
		h := &half{cmd: exec.Command(bin, device, "half", role)}
		h.in, _ = h.cmd.StdinPipe()
		o, _ := h.cmd.StdoutPipe()
		h.cmd.Stderr = os.Stderr
		h.out = bufio.NewReader(o)
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.cmd.Process.Kill(); _ = h.cmd.Wait() })
		l, err := h.out.ReadString('\n')
		var qpn, rkey, a uint64
		if n, _ := fmt.Sscanf(l, "qpn %d rkey %d addr %d", &qpn, &rkey, &a); err != nil || n != 3 {
			t.Fatalf("faults half %s: %q, %v", role, l, err)
		}
		h.line = fmt.Sprintf("%d %d %d\n", qpn, rkey, a)
		return h
	}
	w, target := start("writer"), start("target")
	for _, p := range [][2]*half{{w, target}, {target, w}} {
		if _, err := io.WriteString(p[0].in, p[1].line); err != nil {
			t.Fatal(err)
		}
		if l, err := p[0].out.ReadString('\n'); err != nil || l != "rts\n" {
			t.Fatalf("faults half: %q, %v", l, err)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few writes
	if err := target.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(w.out); done <- b }()
	select {
	case said := <-done:
		if !bytes.Contains(said, []byte("\nwc 12 ")) {
			t.Errorf("the writer, its target killed: %q; want wc 12 (transport retry counter exceeded)", said)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the writer did not fail within 30 s of its target's death")
	}
	return w.cmd.Process.Pid
}

// rdmaCgroup makes a child cgroup with the rdma controller; at the end
// its limits go back to max before it is removed, which frees its resource
// pool on the device. A pool left to the removal outlives the cgroup, and
// the device's next unregister unlinks it from the freed cgroup: "list_del
// corruption" in free_cg_rpool_locked, a kernel BUG that killed `rdma link
// delete` (6.1; 6.12 too) and left ib_core unable to register rxe0 again.
func rdmaCgroup(t *testing.T, mount, name string) string {
	t.Helper()
	cg := filepath.Join(mount, name)
	if err := os.WriteFile(filepath.Join(mount, "cgroup.subtree_control"), []byte("+rdma"), 0o644); err != nil {
		t.Fatalf("enabling the rdma controller: %v", err)
	}
	if err := os.Mkdir(cg, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(device+" hca_handle=max hca_object=max"), 0o644); err != nil {
			t.Errorf("rdma.max back to max: %v", err)
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing the rdma cgroup: %v", err)
		}
	})
	return cg
}

func setMax(t *testing.T, cg, limits string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cg, "rdma.max"), []byte(limits), 0o644); err != nil {
		t.Fatalf("rdma.max %q: %v", limits, err)
	}
}

// checkRefusals: each limit's refusal is a call-fail event of verbsfail
// with the op and errno it printed.
func checkRefusals(t *testing.T, evs []traced, refusals map[int]refusal) {
	for pid, r := range refusals {
		e := findEvent(evs, func(e *traced) bool { return e.Kind == rdma.EvCallFail && e.process() == strconv.Itoa(pid) })
		if e == nil {
			t.Errorf("no call-fail event of verbsfail[%d], which printed %+v", pid, r)
			continue
		}
		op := r.op
		if op == "open_device" {
			op = "get_context" // the uverbs call ibv_open_device makes
		}
		if e.CallFail.Op != op || int(e.CallFail.Errno) != r.errno {
			t.Errorf("verbsfail[%d]: %s\nwant %s, errno %d", pid, e.line, op, r.errno)
		}
	}
}

// cleanWorkloads runs programs that end normally, side by side:
// rdma_cm's (rping, ib_write_bw -R, rdma_server and rdma_client,
// ucmatose), plain verbs' (ib_send_lat, the libibverbs pingpongs over RC,
// UD and an SRQ) and tidy programs of ours (churn, qpattr). Each server is
// listening before any client starts; perftest's pairs come after the
// others, one at a time.
func cleanWorkloads(t *testing.T) []clean {
	t.Helper()
	gid := strconv.Itoa(ipv4GIDIndex(t))
	type proc struct {
		name string
		cmd  *exec.Cmd
		said *bytes.Buffer
		done chan error
	}
	start := func(name string, argv []string) *proc {
		p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), said: &bytes.Buffer{}, done: make(chan error, 1)}
		p.cmd.Stdout, p.cmd.Stderr = p.said, p.said
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		go func() { p.done <- p.cmd.Wait() }()
		return p
	}
	pairs := []struct {
		name, port     string
		server, client []string
	}{
		{"rping (the client ends it)", "7961", []string{"rping", "-s", "-a", addr, "-p", "7961", "-C", "3"}, []string{"rping", "-c", "-a", addr, "-p", "7961", "-C", "3"}},
		{"ibv_rc_pingpong", "18603", []string{"ibv_rc_pingpong", "-d", device, "-g", gid, "-p", "18603", "-n", "50"}, []string{"ibv_rc_pingpong", "-d", device, "-g", gid, "-p", "18603", "-n", "50", "localhost"}},
		{"ibv_ud_pingpong", "18604", []string{"ibv_ud_pingpong", "-d", device, "-g", gid, "-p", "18604", "-n", "50"}, []string{"ibv_ud_pingpong", "-d", device, "-g", gid, "-p", "18604", "-n", "50", "localhost"}},
		{"ibv_srq_pingpong", "18605", []string{"ibv_srq_pingpong", "-d", device, "-g", gid, "-p", "18605", "-n", "50"}, []string{"ibv_srq_pingpong", "-d", device, "-g", gid, "-p", "18605", "-n", "50", "localhost"}},
		{"rdma_server and rdma_client", "7962", []string{"rdma_server", "-p", "7962"}, []string{"rdma_client", "-s", addr, "-p", "7962"}},
		{"ucmatose", "7963", []string{"ucmatose", "-b", addr, "-p", "7963", "-c", "2"}, []string{"ucmatose", "-s", addr, "-p", "7963", "-c", "2"}},
	}
	perftests := []struct {
		name, port     string
		server, client []string
	}{
		{"ib_write_bw -R", "18600", []string{"ib_write_bw", "-d", device, "-R", "-p", "18600", "-n", "100"}, []string{"ib_write_bw", "-d", device, "-R", "-p", "18600", "-n", "100", addr}},
		{"ib_send_lat", "18601", []string{"ib_send_lat", "-d", device, "-p", "18601", "-n", "100"}, []string{"ib_send_lat", "-d", device, "-p", "18601", "-n", "100", addr}},
	}
	var servers, clients []*proc
	var ports []string
	for _, p := range pairs {
		servers = append(servers, start(p.name+"'s server", p.server))
		ports = append(ports, p.port)
	}
	waitListening(t, ports...)
	for _, p := range pairs {
		clients = append(clients, start(p.name+"'s client", p.client))
	}
	alone := []*proc{
		start("churn", []string{filepath.Join(*workloads, "churn"), device, "5"}),
		start("qpattr", []string{filepath.Join(*workloads, "qpattr"), "-d", device}),
	}
	wait := func(procs []*proc) {
		deadline := time.Now().Add(90 * time.Second)
		for _, p := range procs {
			select {
			case err := <-p.done:
				if err != nil {
					t.Errorf("%s: %v\n%s", p.name, err, p.said.String())
				}
			case <-time.After(time.Until(deadline)):
				_ = p.cmd.Process.Kill()
				t.Errorf("%s did not end within 90 s\n%s", p.name, p.said.String())
			}
		}
	}
	wait(slices.Concat(clients, servers, alone))
	// perftest's, one pair after the other: it times its own clock,
	// and beside the others under the emulator its sample of it was
	// refused ("Correlation coefficient r^2: 0.777112 < 0.9", 6.1).
	for _, p := range perftests {
		s := start(p.name+"'s server", p.server)
		waitListening(t, p.port)
		c := start(p.name+"'s client", p.client)
		wait([]*proc{c, s})
		pairs = append(pairs, p)
		servers, clients = append(servers, s), append(clients, c)
	}
	var cleans []clean
	for i, p := range pairs {
		cleans = append(cleans, clean{name: p.name, pids: []int{servers[i].cmd.Process.Pid, clients[i].cmd.Process.Pid}})
	}
	for _, p := range alone {
		cleans = append(cleans, clean{name: p.name, pids: []int{p.cmd.Process.Pid}})
	}
	return cleans
}

// ipv4GIDIndex is the index of rxe0's last GID of its IPv4 address (RoCE
// v2 after v1), as the pingpongs' -g wants it.
func ipv4GIDIndex(t *testing.T) int {
	t.Helper()
	want := "0000:0000:0000:0000:0000:ffff:0a63:0001"
	idx := -1
	for i := 0; i < 16; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/1/gids/%d", device, i))
		if err == nil && strings.TrimSpace(string(b)) == want {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("no GID %s on %s", want, device)
	}
	return idx
}

// changeGID adds an address to rxe0's netdev and removes it: its GID comes
// and goes.
func changeGID(t *testing.T) (added, removed string) {
	t.Helper()
	const gidAddr = "10.99.9.9"
	gidFile := "0000:0000:0000:0000:0000:ffff:0a63:0909"
	hasGID := func() bool {
		files, _ := filepath.Glob("/sys/class/infiniband/" + device + "/ports/1/gids/*")
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == gidFile {
				return true
			}
		}
		return false
	}
	run(t, "ip", "addr", "add", gidAddr+"/24", "dev", "veth0")
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", gidAddr+"/24", "dev", "veth0").Run() })
	waitFor(t, 20*time.Second, "the address's GID on "+device, hasGID)
	run(t, "ip", "addr", "del", gidAddr+"/24", "dev", "veth0")
	waitFor(t, 20*time.Second, "the address's GID to go from "+device, func() bool { return !hasGID() })
	return gidAddr, gidAddr
}

// flap takes veth0 down and up, with no traffic on rxe0 (after a flap
// under traffic, 6.1's rdma_cm connects over rxe0 timed out until rxe0
// was made again).
func flap(t *testing.T) {
	t.Helper()
	run(t, "ip", "link", "set", "veth0", "down")
	t.Cleanup(func() { _, _, _ = runStatus("ip", "link", "set", "veth0", "up") })
	waitFor(t, 10*time.Second, device+"/1 DOWN", func() bool { return strings.Contains(portState(t), "DOWN") })
	run(t, "ip", "link", "set", "veth0", "up")
	if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil {
		t.Fatalf("%s after the flap: %v\n%s", *rdmaUp, err, out)
	}
}

// removeDevices makes rxe1 on a veth of its own, deletes it under a
// connected rping pair, makes it again and moves its netdev to another
// network namespace under an rping listener (rxe unregisters a device
// whose netdev leaves: NETDEV_UNREGISTER). It returns the rping processes
// of each.
func removeDevices(t *testing.T) (removed, moved []int) {
	t.Helper()
	const dev, ip, port = "rxe1", "10.99.4.1", "7970"
	if _, err := os.Stat("/sys/class/net/veth4"); err != nil {
		run(t, "ip", "link", "add", "veth4", "type", "veth", "peer", "name", "veth5")
		run(t, "ip", "addr", "add", ip+"/24", "dev", "veth4")
		run(t, "ip", "link", "set", "veth4", "up")
		run(t, "ip", "link", "set", "veth5", "up")
	}
	t.Cleanup(func() {
		_, _, _ = runStatus("rdma", "link", "delete", dev)
		_, _, _ = runStatus("ip", "netns", "del", "rdmatrace-corpus")
		_, _, _ = runStatus("ip", "link", "del", "veth4")
	})
	up := func() {
		run(t, "rdma", "link", "add", dev, "type", "rxe", "netdev", "veth4")
		waitFor(t, 20*time.Second, dev+"'s GID of "+ip, func() bool {
			files, _ := filepath.Glob("/sys/class/infiniband/" + dev + "/ports/1/gids/*")
			for _, f := range files {
				if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == "0000:0000:0000:0000:0000:ffff:0a63:0401" {
					return true
				}
			}
			return false
		})
	}
	rping := func(args ...string) (*exec.Cmd, chan error) {
		c := exec.Command("rping", append(args, "-a", ip, "-p", port)...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		t.Cleanup(func() { _ = c.Process.Kill() })
		return c, done
	}
	ended := func(what string, done chan error) {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not end within 30 s of %s's removal", what, dev)
		}
	}
	up()
	server, serverDone := rping("-s", "-C", "100000000")
	waitListening(t, port)
	client, clientDone := rping("-c", "-C", "100000000")
	waitFor(t, 30*time.Second, "the rping pair's QPs on "+dev+" in RTS", func() bool {
		n := 0
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.DevName == dev && r.QPState == rdma.QPStateRTS {
				n++
			}
		}
		return n >= 2
	})
	run(t, "rdma", "link", "delete", dev)
	ended("the rping server", serverDone)
	ended("the rping client", clientDone)
	removed = []int{server.Process.Pid, client.Process.Pid}

	up()
	listener, listenerDone := rping("-s", "-C", "1")
	waitListening(t, port)
	run(t, "ip", "netns", "add", "rdmatrace-corpus")
	run(t, "ip", "link", "set", "veth4", "netns", "rdmatrace-corpus")
	ended("the rping listener", listenerDone)
	waitFor(t, 30*time.Second, dev+" to go", func() bool { _, err := os.Stat("/sys/class/infiniband/" + dev); return err != nil })
	return removed, []int{listener.Process.Pid}
}

// corpusTable is the table docs/trace.md carries: each class, how it was
// made and what `why` said, then the clean workloads.
func corpusTable(faults []fault, cleans []clean, said map[string]string, kernel string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- Made by TestFaultCorpus (e2e/corpus_test.go) on Linux %s; guest/corpus-table.sh puts it here. -->\n", kernel)
	b.WriteString("| class | fault | made by | what `why` says |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, f := range faults {
		words := "`" + f.what + ": " + said[f.name] + "`"
		if f.what == "" {
			words = "nothing (news, not a failure): `trace` has its `gid-change` event"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.group, f.name, cell(f.made), cell(words))
	}
	var names []string
	for _, c := range cleans {
		names = append(names, c.name)
	}
	fmt.Fprintf(&b, "\nClean workloads, for which `why` says nothing (no failure, no warning): %s.\n", strings.Join(names, ", "))
	return b.Bytes()
}

// whyPort is a port nobody listens on in the guest.
const whyPort = "7931"

// failedClient is an rping client that failed, with what it printed.
type failedClient struct {
	pid    int
	stderr string
}

// rpingFails runs an rping client to whyPort that must fail.
func rpingFails(t *testing.T, args ...string) failedClient {
	t.Helper()
	return rpingFailsOn(t, whyPort, args...)
}

// rpingFailsOn runs an rping client that must fail and returns its pid
// and what it printed.
func rpingFailsOn(t *testing.T, port string, args ...string) failedClient {
	t.Helper()
	cmd := exec.Command("rping", append([]string{"-c", "-C", "1", "-p", port}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err == nil {
		t.Fatalf("rping %v succeeded: %s", args, out.String())
	}
	return failedClient{pid: cmd.Process.Pid, stderr: out.String()}
}

// refusal is what verbsfail printed of the call the kernel refused.
type refusal struct {
	pid          int
	op           string
	errno        int
	asked, limit int
}

var refusedLine = regexp.MustCompile(`refused (\w+) errno=(\d+) asked=(\d+) limit=(\d+)`)

// refuse runs verbsfail (argv after its path) and returns the refusal it
// printed; the program must have been refused.
func refuse(t *testing.T, wrap []string, args ...string) refusal {
	t.Helper()
	argv := append(append([]string(nil), wrap...), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out.String())
	}
	m := refusedLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("%v was not refused: %s", argv, out.String())
	}
	r := refusal{pid: cmd.Process.Pid, op: m[1]}
	r.errno, _ = strconv.Atoi(m[2])
	r.asked, _ = strconv.Atoi(m[3])
	r.limit, _ = strconv.Atoi(m[4])
	return r
}
