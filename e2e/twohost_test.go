//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The two-host test runs in both guests of guest/pair (make
// e2e-twohost): RDMATRACE_PAIR_ROLE says which side this is.
var (
	vlogsBin = flag.String("vlogs", "", "VictoriaLogs' binary (guest/vlogs.sh), for the two-host test")
	linkUp   = flag.String("link-up", "guest/link-up.sh", "script that puts rxe0 on the two guests' link")
)

const (
	ctlPort   = "7470" // the two guests' control connection, on the link
	storePort = "9428"
)

// ctl is the two guests' control connection: each side says what it did
// and waits for what the other did, one line a step ("STEP JSON"). A side
// that fails says so ("abort WHY"): the other fails with its words rather
// than waiting. A side that is gone closes the connection: the same.
type ctl struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	role string
}

// connect opens the control connection: a listens on its address, b
// connects to it, trying again until a listens (a TCP wait).
func connect(t *testing.T, role, self, peer string) *ctl {
	t.Helper()
	c := &ctl{t: t, role: role}
	deadline := time.Now().Add(5 * time.Minute)
	if role == "a" {
		ln, err := net.Listen("tcp", net.JoinHostPort(self, ctlPort))
		if err != nil {
			t.Fatal(err)
		}
		_ = ln.(*net.TCPListener).SetDeadline(deadline)
		c.conn, err = ln.Accept()
		ln.Close()
		if err != nil {
			t.Fatalf("no connection from the other guest: %v", err)
		}
	} else {
		for {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(peer, ctlPort), 5*time.Second)
			if err == nil {
				c.conn = conn
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the other guest never listened on %s:%s: %v", peer, ctlPort, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	c.r = bufio.NewReader(c.conn)
	t.Cleanup(func() {
		if t.Failed() {
			fmt.Fprintf(c.conn, "abort %s failed\n", role)
		}
		c.conn.Close()
	})
	return c
}

// say tells the other side that step is done, with v.
func (c *ctl) say(step string, v any) {
	c.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(c.conn, "%s %s\n", step, b); err != nil {
		c.t.Fatalf("telling the other guest %s: %v", step, err)
	}
}

// wait waits for the other side's step (within limit) and reads its value
// into v.
func (c *ctl) wait(step string, limit time.Duration, v any) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(limit))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("waiting %v for the other guest's %q: %v", limit, step, err)
	}
	got, data, _ := strings.Cut(strings.TrimSpace(line), " ")
	if got == "abort" {
		c.t.Fatalf("the other guest gave up (%s) while this one waited for %q", data, step)
	}
	if got != step {
		c.t.Fatalf("the other guest said %q, expected %q", line, step)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(data), v); err != nil {
			c.t.Fatalf("the other guest's %s: %v (%q)", step, err, data)
		}
	}
}

// ownedQP is a QP as `rdma res` on its host shows it, with its process.
type ownedQP struct {
	LQPN, RQPN uint32
	Tgid       uint32
	Comm       string
}

// TestTwoHosts: two guests on one link, each with rxe0 on it and its own
// rdmatrace sending identity records to a VictoriaLogs that guest a
// runs. An rping pair and an ib_write_bw pair connect a's clients to b's
// servers; for each of b's QPs that `rdma res` on b lists, `rdmatrace peer`
// on a names b's node, the QP's owner (pid and comm as b's kernel says)
// and its peer, a's QP. Then b kills both servers by SIGKILL: `peer --at` a moment before names b's rping with its
// fate; a's ib_write_bw fails (RETRY_EXC_ERR) and `why --store` on a's
// recording names b's ib_write_bw QP, its owner and its death in the
// failure's sentence. b removes rxe0 and adds it again, and a new rping
// pair gives b's new server the QPN a killed one had: `peer` names the
// live lifetime, `peer --at` the killed one. b runs the exporter: it must
// have sent its records, dropped none, and serve no per-QP series.
func TestTwoHosts(t *testing.T) {
	role := os.Getenv("RDMATRACE_PAIR_ROLE")
	if role == "" {
		t.Skip("the two-host test runs in the two guests of guest/pair (make e2e-twohost)")
	}
	needModuleBTF(t)
	self, peer := os.Getenv("RDMATRACE_PAIR_ADDR"), os.Getenv("RDMATRACE_PAIR_PEER")
	run(t, *linkUp, self)
	c := connect(t, role, self, peer)
	// The guests' clocks come from the emulated RTC, a second apart at
	// worst: a takes b's, as a fleet's nodes keep one clock by NTP, so
	// that a failure on a and a death on b are told in order.
	if role == "b" {
		c.say("clock", time.Now())
	} else {
		var bt time.Time
		c.wait("clock", 5*time.Minute, &bt)
		tv := syscall.NsecToTimeval(bt.UnixNano())
		if err := syscall.Settimeofday(&tv); err != nil {
			t.Fatalf("setting a's clock to b's: %v", err)
		}
	}
	store := "http://" + net.JoinHostPort("10.98.1.1", storePort) // a's
	otlpURL := store + "/insert/opentelemetry/v1/logs"
	if role == "a" {
		twoHostsA(t, c, store, otlpURL)
	} else {
		twoHostsB(t, c, otlpURL)
	}
}

func twoHostsA(t *testing.T, c *ctl, store, otlpURL string) {
	if *vlogsBin == "" {
		t.Fatal("-vlogs: VictoriaLogs' binary is needed (guest/vlogs.sh builds it)")
	}
	vl := exec.Command(*vlogsBin, "-storageDataPath", filepath.Join(t.TempDir(), "vl"),
		"-httpListenAddr", net.JoinHostPort("10.98.1.1", storePort), "-loggerLevel", "WARN")
	var vlog bytes.Buffer
	vl.Stdout, vl.Stderr = &vlog, &vlog
	if err := vl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = vl.Process.Kill()
		_ = vl.Wait()
		if t.Failed() {
			t.Logf("VictoriaLogs said:\n%s", vlog.String())
		}
	})
	waitFor(t, 120*time.Second, "VictoriaLogs to answer /health", func() bool {
		resp, err := http.Get(store + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	tr := startTrace(t, "--otlp", otlpURL, "--node", "node-a")
	t.Cleanup(func() {
		if tr.cmd.ProcessState == nil {
			_ = tr.cmd.Process.Kill()
			_ = tr.cmd.Wait()
		}
	})
	c.say("store", nil)

	var ports map[string]string
	c.wait("listening", 5*time.Minute, &ports)
	w := &workload{t: t}
	t.Cleanup(w.stop)
	rp := w.start("rping", "-c", "-a", "10.98.1.2", "-p", ports["rping"], "-C", "1000000")
	// rxe retries for ever with a retry count of 7 (perftest's default;
	// the spec means that of the RNR retry count only): 1 gives up after
	// one retry.
	bw := w.start("ib_write_bw", "-R", "-d", device, "-p", ports["bw"], "-D", "600", "-F", "--retry_count=1", "10.98.1.2")
	// Our side is up when rping holds an RC QP in RTS and ib_write_bw
	// two: perftest over rdma_cm connects one for its exchange first,
	// then the one it writes on.
	var ours []rdma.Resource
	waitFor(t, 120*time.Second, "the clients' QPs in RTS", func() bool {
		ours = ours[:0]
		got := map[*exec.Cmd]int{}
		for _, r := range snapshot(t, rdma.ResQP) {
			for _, p := range []*exec.Cmd{rp, bw} {
				if threads(p)[r.Owner.PID] && r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
					got[p]++
					ours = append(ours, r)
				}
			}
		}
		return got[rp] >= 1 && got[bw] >= 2
	})
	c.say("connected", nil)

	var theirs []ownedQP
	c.wait("qps", 5*time.Minute, &theirs)
	if len(theirs) < 2 {
		t.Fatalf("b's rdma res shows %d QPs of its servers, want rping's and ib_write_bw's", len(theirs))
	}
	for _, q := range theirs {
		if q.Comm != "rping" && q.Comm != "ib_write_bw" {
			t.Fatalf("b's QP %d belongs to %q[%d], not to its servers", q.LQPN, q.Comm, q.Tgid)
		}
	}
	began := time.Now()
	for _, q := range theirs {
		// a's QP connected to it, as a's kernel says.
		var mine uint32
		for _, r := range ours {
			if r.RQPN == q.LQPN {
				mine = r.LQPN
			}
		}
		if mine == 0 {
			t.Fatalf("none of a's clients' QPs %v is connected to b's QP %d", ours, q.LQPN)
		}
		// The answer is b's record of the connect: it names a's QP.
		// Until then peer gives the record of the create, without rqpn.
		got := askPeer(t, store, 60*time.Second, func(got map[string]any) bool { return got["rqpn"] == float64(mine) },
			"10.98.1.2", strconv.FormatUint(uint64(q.LQPN), 10))
		want := map[string]any{"node": "node-b", "ifname": device, "comm": q.Comm, "pid": float64(q.Tgid), "which": "live",
			"rqpn": float64(mine), "netdev": "eth0", "fate": "alive"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("peer 10.98.1.2 %d: %s = %v, b's rdma res (and a's, for rqpn) say %v\n%v", q.LQPN, k, got[k], v, got)
			}
		}
	}
	t.Logf("peer named b's %d QPs within %v", len(theirs), time.Since(began).Round(time.Millisecond))

	// b's rping server killed by SIGKILL: its QP's last record says so,
	// and peer --at a moment before the kill names it as the QP that held
	// the QPN then, ended after it.
	c.say("kill", nil)
	var killed struct {
		LQPN   uint32
		Before time.Time // on b's clock, just before the kill
	}
	c.wait("killed", 2*time.Minute, &killed)
	at := killed.Before.UTC().Format(time.RFC3339Nano)
	got := askPeer(t, store, 60*time.Second, func(got map[string]any) bool { return got["fate"] != "alive" },
		"--at", at, "10.98.1.2", strconv.FormatUint(uint64(killed.LQPN), 10))
	if got["which"] != "at" || got["fate"] != "signal" || got["signal"] != "SIGKILL" || got["comm"] != "rping" {
		t.Errorf("peer --at %s 10.98.1.2 %d after rping was killed: %v; want the one alive at that time, freed when killed by SIGKILL", at, killed.LQPN, got)
	}
	out, _, _ := runStatus(*rdmatraceBin, "peer", "--store", store, "--at", at, "10.98.1.2", strconv.FormatUint(uint64(killed.LQPN), 10))
	t.Logf("peer --at %s 10.98.1.2 %d:\n%s", at, killed.LQPN, out)
	keep(t, "twohost/peer-killed.txt", out)

	// a's ib_write_bw was writing: with b silent its QP retries, gives
	// up (RETRY_EXC_ERR, its retry count 1) and goes to ERR, and the
	// client exits. why --store, from a's recording, names b's QP that
	// was its peer, its owner and its death in the failure's sentence.
	waitFor(t, 60*time.Second, "a's ib_write_bw to fail with b silent", func() bool { return exited(bw) })
	failedAt := time.Now()
	// perftest's server holds two QPs (one for its exchange): the one
	// that failed on a is the one a's kernel said its QP was connected
	// to. Both were freed at the kill: the store has their ends once
	// peer says so of each.
	bwQPs := map[uint32]ownedQP{}
	for _, q := range theirs {
		if q.Comm == "ib_write_bw" {
			bwQPs[q.LQPN] = q
			askPeer(t, store, 60*time.Second, func(got map[string]any) bool { return got["fate"] == "signal" },
				"--at", at, "10.98.1.2", strconv.FormatUint(uint64(q.LQPN), 10))
		}
	}
	recording := filepath.Join(t.TempDir(), "a.ndjson")
	tr.stop()
	if err := os.WriteFile(recording, tr.out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	keep(t, "twohost/trace-a.ndjson", tr.out.Bytes())
	out, stderr, err := runStatus(*rdmatraceBin, "why", "-r", recording, "--comm", "ib_write_bw", "--store", store, "--node", "node-a")
	keep(t, "twohost/why-store.txt", out)
	t.Logf("why -r a.ndjson --comm ib_write_bw --store %s --node node-a (%v, %v after the failure):\n%s%s", store, err, time.Since(failedAt).Round(time.Millisecond), out, stderr)
	// Each line of a's failed ib_write_bw QP ("qp 19 rxe0/1 ib_write_bw[207] ...
	// RETRY_EXC_ERR ...") names, in the same sentence, the QP of b's
	// ib_write_bw that a's kernel said it was connected to, its owner and
	// its death.
	lineRE := regexp.MustCompile(`^\S+ qp (\d+) ` + device + `/1 +ib_write_bw\[(\d+)\] .*RETRY_EXC_ERR`)
	named := 0
	for _, l := range strings.Split(string(out), "\n") {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[2] != strconv.Itoa(bw.Process.Pid) {
			t.Errorf("why names ib_write_bw[%s], a's client is ib_write_bw[%d]: %s", m[2], bw.Process.Pid, l)
		}
		var peerQP ownedQP
		for _, r := range ours {
			if strconv.FormatUint(uint64(r.LQPN), 10) == m[1] {
				peerQP = bwQPs[r.RQPN]
			}
		}
		if peerQP.LQPN == 0 {
			t.Errorf("why names a's QP %s, not one of a's ib_write_bw's QPs connected to b's ib_write_bw's %v: %s", m[1], bwQPs, l)
			continue
		}
		words := fmt.Sprintf("its peer QP %d on node-b (ib_write_bw[%d]) was freed ", peerQP.LQPN, peerQP.Tgid)
		if !strings.Contains(l, words) || !strings.HasSuffix(l, "earlier when its owner was killed by SIGKILL") {
			t.Errorf("why's line of a's failed QP %s, want %q ... \"earlier when its owner was killed by SIGKILL\": %s", m[1], words, l)
		}
		named++
	}
	if named == 0 {
		t.Errorf("why --store on a names no RETRY_EXC_ERR of a's ib_write_bw[%d]", bw.Process.Pid)
	}
	// A person at the store asks in LogsQL: the QPs freed by a signal.
	logsql := `{event_name="rdma.qp.identity"} rdma.qp.change:=ended rdma.qp.fate:=signal` +
		` | fields _time, host.name, rdma.device, rdma.qp.num, process.executable.name, process.pid, rdma.owner.signal | sort by (_time)`
	resp, err := http.PostForm(store+"/select/logsql/query", url.Values{"query": {logsql}})
	if err != nil {
		t.Fatalf("LogsQL %s: %v", logsql, err)
	}
	rows, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	keep(t, "twohost/logsql-killed.ndjson", rows)
	t.Logf("LogsQL %s:\n%s", logsql, rows)
	killedQPs := map[string]bool{}
	for _, l := range bytes.Split(rows, []byte("\n")) {
		var f map[string]string
		if json.Unmarshal(l, &f) == nil && f["host.name"] == "node-b" && f["rdma.owner.signal"] == "SIGKILL" {
			killedQPs[f["rdma.qp.num"]+" "+f["process.executable.name"]+"["+f["process.pid"]+"]"] = true
		}
	}
	for _, q := range theirs {
		if want := fmt.Sprintf("%d %s[%d]", q.LQPN, q.Comm, q.Tgid); !killedQPs[want] {
			t.Errorf("LogsQL's QPs freed by a signal lack b's QP %s: %v", want, killedQPs)
		}
	}
	w.stop()

	// QPN reuse: b removes rxe0 and adds it again (its QPNs start over:
	// rxe numbers QPs cyclically from its pool, reused only once the pool
	// wraps, 128 K QPs later, or a new device starts it again), and a
	// connects a new rping to b's new server, whose QP takes the number
	// one of b's killed servers' QPs had. peer --at before the kill names
	// the killed one, peer without --at the live one.
	c.say("reuse", nil)
	var again struct{ Port string }
	c.wait("listening-again", 5*time.Minute, &again)
	w2 := &workload{t: t}
	t.Cleanup(w2.stop)
	rp2 := w2.start("rping", "-c", "-a", "10.98.1.2", "-p", again.Port, "-C", "1000000")
	waitFor(t, 120*time.Second, "the new rping's QP in RTS", func() bool {
		for _, r := range snapshot(t, rdma.ResQP) {
			if threads(rp2)[r.Owner.PID] && r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
				return true
			}
		}
		return false
	})
	c.say("connected-again", nil)
	var reused struct {
		LQPN   uint32
		Old    ownedQP // the killed server that held the number
		New    ownedQP
		Before time.Time
	}
	c.wait("reused", 2*time.Minute, &reused)
	qpn := strconv.FormatUint(uint64(reused.LQPN), 10)
	live := askPeer(t, store, 60*time.Second, func(got map[string]any) bool { return got["pid"] == float64(reused.New.Tgid) && got["rqpn"] != nil },
		"10.98.1.2", qpn)
	then := askPeer(t, store, 60*time.Second, func(map[string]any) bool { return true },
		"--at", reused.Before.UTC().Format(time.RFC3339Nano), "10.98.1.2", qpn)
	if live["which"] != "live" || live["comm"] != "rping" || live["fate"] != "alive" || live["lifetimes"] != float64(2) {
		t.Errorf("peer 10.98.1.2 %s after the number came back: %v; want the new rping[%d], live, of 2 lifetimes", qpn, live, reused.New.Tgid)
	}
	if then["which"] != "at" || then["pid"] != float64(reused.Old.Tgid) || then["comm"] != reused.Old.Comm || then["fate"] != "signal" {
		t.Errorf("peer --at %s 10.98.1.2 %s: %v; want %s[%d], the one killed by SIGKILL", reused.Before, qpn, then, reused.Old.Comm, reused.Old.Tgid)
	}
	for _, args := range [][]string{{"10.98.1.2", qpn}, {"--at", reused.Before.UTC().Format(time.RFC3339Nano), "10.98.1.2", qpn}} {
		out, _, _ := runStatus(*rdmatraceBin, append([]string{"peer", "--store", store}, args...)...)
		t.Logf("peer %s:\n%s", strings.Join(args, " "), out)
		keep(t, "twohost/peer-reused-"+map[bool]string{true: "live", false: "at"}[len(args) == 2]+".txt", out)
	}
	w2.stop()
	c.say("done", nil)
}

// askPeer runs `peer --store STORE ARGS -j` (the store flushed first)
// until its answer is what ok wants, within limit, and returns it; it
// fails the test with the last answer.
func askPeer(t *testing.T, store string, limit time.Duration, ok func(map[string]any) bool, args ...string) map[string]any {
	t.Helper()
	var got map[string]any
	var said []byte
	for deadline := time.Now().Add(limit); ; {
		resp, err := http.Get(store + "/internal/force_flush")
		if err == nil {
			resp.Body.Close()
		}
		out, stderr, err := runStatus(*rdmatraceBin, append(append([]string{"peer", "--store", store}, args...), "-j")...)
		got, said = nil, append(out, stderr...)
		if err == nil && json.Unmarshal(out, &got) == nil && ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("peer %s: no answer as wanted within %v; the last: %s", strings.Join(args, " "), limit, said)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func twoHostsB(t *testing.T, c *ctl, otlpURL string) {
	c.wait("store", 5*time.Minute, nil)
	// b runs the exporter, as a DaemonSet's node does: its identity
	// records go to the store, its metrics count them.
	metrics := startOTLPExporter(t, otlpURL, "node-b")
	w := &workload{t: t}
	t.Cleanup(w.stop)
	ports += 10
	rpPort, bwPort := strconv.Itoa(ports), strconv.Itoa(ports+1)
	rp := w.start("rping", "-s", "-a", "10.98.1.2", "-p", rpPort)
	bw := w.start("ib_write_bw", "-R", "-d", device, "-p", bwPort, "-D", "600", "-F", "--retry_count=1")
	waitListening(t, rpPort, bwPort)
	c.say("listening", map[string]string{"rping": rpPort, "bw": bwPort})

	c.wait("connected", 5*time.Minute, nil)
	// b's QPs of its servers, as b's kernel lists them.
	var qps []ownedQP
	waitFor(t, 60*time.Second, "the servers' QPs in RTS", func() bool {
		qps = qps[:0]
		got := map[*exec.Cmd]bool{}
		for _, r := range snapshot(t, rdma.ResQP) {
			for _, p := range []*exec.Cmd{rp, bw} {
				if threads(p)[r.Owner.PID] && r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS && r.Given(rdma.HasRQPN) {
					got[p] = true
					comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Process.Pid)) // netlink gives the pid
					qps = append(qps, ownedQP{LQPN: r.LQPN, RQPN: r.RQPN, Tgid: uint32(p.Process.Pid), Comm: strings.TrimSpace(string(comm))})
				}
			}
		}
		return len(got) == 2
	})
	keep(t, "twohost/rdma-res-qp-b.json", run(t, "rdma", "-j", "res", "show", "qp"))
	c.say("qps", qps)

	c.wait("kill", 10*time.Minute, nil)
	var rpQP uint32
	for _, q := range qps {
		if q.Tgid == uint32(rp.Process.Pid) {
			rpQP = q.LQPN
		}
	}
	// Every QP of the servers, for the reuse below: perftest's server
	// may hold more than the one connected.
	var held []ownedQP
	for _, r := range snapshot(t, rdma.ResQP) {
		for _, p := range []*exec.Cmd{rp, bw} {
			if threads(p)[r.Owner.PID] {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.Process.Pid))
				held = append(held, ownedQP{LQPN: r.LQPN, Tgid: uint32(p.Process.Pid), Comm: strings.TrimSpace(string(comm))})
			}
		}
	}
	// The kills free the servers' QPs; rxe drops what comes for a QP
	// it no longer has, without an answer, so a's writer retries and
	// fails (transport retries exhausted) after the kill, never before.
	// (Dropping b's packets first instead raced the kill: a's writer
	// gave up once 11 s before b, slowed by its neighbours, killed.)
	before := time.Now()
	_ = syscall.Kill(rp.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(bw.Process.Pid, syscall.SIGKILL)
	c.say("killed", map[string]any{"LQPN": rpQP, "Before": before})

	// QPN reuse: rxe0 removed and added again numbers its QPs from the
	// start of its pool: the next QP takes the number the first of the
	// killed servers' QPs had.
	c.wait("reuse", 10*time.Minute, nil)
	run(t, "rdma", "link", "delete", device)
	run(t, *linkUp, os.Getenv("RDMATRACE_PAIR_ADDR"))
	ports++
	again := strconv.Itoa(ports + 10)
	rp2 := w.start("rping", "-s", "-a", "10.98.1.2", "-p", again)
	waitListening(t, again)
	c.say("listening-again", map[string]string{"Port": again})
	c.wait("connected-again", 5*time.Minute, nil)
	var now ownedQP
	waitFor(t, 60*time.Second, "the new server's QP in RTS", func() bool {
		for _, r := range snapshot(t, rdma.ResQP) {
			if threads(rp2)[r.Owner.PID] && r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
				now = ownedQP{LQPN: r.LQPN, RQPN: r.RQPN, Tgid: uint32(rp2.Process.Pid), Comm: "rping"}
				return true
			}
		}
		return false
	})
	var old *ownedQP
	for i := range held {
		if held[i].LQPN == now.LQPN {
			old = &held[i]
		}
	}
	if old == nil {
		t.Fatalf("rxe0 added again gave the new rping QP %d, a number none of the killed servers' QPs %v had", now.LQPN, held)
	}
	t.Logf("QPN %d came back: %s[%d]'s, killed, now rping[%d]'s", now.LQPN, old.Comm, old.Tgid, now.Tgid)
	c.say("reused", map[string]any{"LQPN": now.LQPN, "Old": old, "New": now, "Before": before})
	c.wait("done", 10*time.Minute, nil)
	w.signal(syscall.SIGKILL)

	// What it sent is counted, nothing lost; no series is per QP (the
	// identity records are the store's, never Prometheus labels).
	m := scrape(t, metrics)
	if m["rdmatrace_otlp_sent_total{}"] == 0 || m["rdmatrace_otlp_dropped_total{}"] != 0 {
		t.Errorf("b's exporter: %v records sent, %v dropped; want some sent, none dropped",
			m["rdmatrace_otlp_sent_total{}"], m["rdmatrace_otlp_dropped_total{}"])
	}
	for k := range m {
		if strings.Contains(k, "qpn=") || strings.Contains(k, "{qp=") || strings.Contains(k, ",qp=") {
			t.Errorf("a per-QP series in b's exporter: %s", k)
		}
	}
	t.Logf("b's exporter: %v OTLP records sent, %v dropped, %d series", m["rdmatrace_otlp_sent_total{}"], m["rdmatrace_otlp_dropped_total{}"], len(m))
}

// startOTLPExporter runs `rdmatrace exporter --otlp URL --node NODE` on
// the loopback until the test ends, and returns the address it serves.
func startOTLPExporter(t *testing.T, otlpURL, node string) string {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	exp := exec.Command(*rdmatraceBin, "exporter", "--listen", "127.0.0.1:0", "--ready-file", ready, "--otlp", otlpURL, "--node", node)
	var stderr lockedBuffer
	exp.Stderr = &stderr
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- exp.Wait() }()
	t.Cleanup(func() {
		_ = exp.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = exp.Process.Kill()
			t.Error("exporter still running 60 s after SIGTERM")
		}
		t.Logf("b's exporter said:\n%s", stderr.String())
	})
	waitFor(t, 60*time.Second, "the exporter to serve with its tracer", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("the exporter exited: %v\n%s", err, stderr.String())
		default:
		}
		_, err := os.Stat(ready)
		return err == nil
	})
	b, _ := os.ReadFile(ready)
	return strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
}
