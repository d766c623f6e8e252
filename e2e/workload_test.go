//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
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
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

var (
	rdmatraceBin = flag.String("rdmatrace", "bin/rdmatrace", "the rdmatrace binary under test")
	outDir       = flag.String("out", os.Getenv("GUEST_OUT"), "where to leave captured data for the host (empty: nowhere)")
)

const (
	addr   = "10.99.0.1" // rxe0's address on the guest-only veth
	device = "rxe0"
)

// workload is a set of started RDMA programs.
type workload struct {
	t     *testing.T
	procs []*exec.Cmd
	logs  []*bytes.Buffer
	// place, when set, puts each program where it runs (namespaces,
	// cgroup) before it starts.
	place func(*syscall.SysProcAttr)
}

func (w *workload) start(name string, args ...string) *exec.Cmd {
	w.t.Helper()
	cmd := exec.Command(name, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if w.place != nil {
		w.place(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start %s: %v", name, err)
	}
	w.procs = append(w.procs, cmd)
	w.logs = append(w.logs, &log)
	return cmd
}

// signal sends sig to every workload's process group.
func (w *workload) signal(sig syscall.Signal) {
	for _, p := range w.procs {
		if p.Process != nil {
			_ = syscall.Kill(-p.Process.Pid, sig)
		}
	}
}

// stop kills everything and reaps it; on failure it shows the programs'
// output. It may be called more than once.
func (w *workload) stop() {
	w.signal(syscall.SIGKILL)
	for i, p := range w.procs {
		_ = p.Wait()
		if w.t.Failed() {
			w.t.Logf("output of %s:\n%s", strings.Join(p.Args, " "), w.logs[i].String())
		}
	}
	w.procs, w.logs = nil, nil
}

// ports gives each workload its own TCP and rdma_cm ports, so a program
// never meets the TIME_WAIT sockets of the one before it.
var ports = 18500

// gidIndex finds the GID index that holds rxe0's IPv4-mapped address, which
// ibv_rc_pingpong needs for RoCE v2.
func gidIndex(t *testing.T) string {
	want := "0000:0000:0000:0000:0000:ffff:0a63:0001"
	for i := 0; i < 16; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/sys/class/infiniband/%s/ports/1/gids/%d", device, i))
		if err == nil && strings.TrimSpace(string(b)) == want {
			return fmt.Sprint(i)
		}
	}
	t.Fatalf("no GID of %s holds %s", device, addr)
	return ""
}

// pair is a server and its client, each holding qps RC QPs once connected.
type pair struct {
	qps            int
	server, client func(port string) []string
	s, c           *exec.Cmd // the running attempt
	attempts       int
}

// startAll starts an rping pair, an ib_write_lat -R pair, an
// ibv_rc_pingpong pair and an ibv_srq_pingpong pair (an SRQ with 4 QPs on
// each side), one pair after the other, and returns when all 14 RC QPs are
// in RTS.
func startAll(t *testing.T) *workload {
	w := &workload{t: t}
	t.Cleanup(w.stop) // also when waiting below fails
	gid := gidIndex(t)
	t.Cleanup(func() {
		if t.Failed() { // what the programs had made
			out, _, _ := runStatus("sh", "-c", "rdma res show qp; rdma res show cm_id; ss -tan")
			t.Logf("at the end:\n%s", out)
		}
	})
	pairs := []*pair{
		{qps: 1, server: func(p string) []string { return []string{"rping", "-s", "-a", addr, "-p", p, "-C", "10000000"} },
			client: func(p string) []string { return []string{"rping", "-c", "-a", addr, "-p", p, "-C", "10000000"} }},
		{qps: 1, server: func(p string) []string {
			return []string{"ib_write_lat", "-d", device, "-R", "-p", p, "-n", "100000000"}
		}, client: func(p string) []string {
			return []string{"ib_write_lat", "-d", device, "-R", "-p", p, "-n", "100000000", addr}
		}},
		{qps: 1, server: func(p string) []string {
			return []string{"ibv_rc_pingpong", "-d", device, "-g", gid, "-p", p, "-n", "100000000"}
		}, client: func(p string) []string {
			return []string{"ibv_rc_pingpong", "-d", device, "-g", gid, "-p", p, "-n", "100000000", addr}
		}},
		{qps: 4, server: func(p string) []string {
			return []string{"ibv_srq_pingpong", "-d", device, "-g", gid, "-p", p, "-q", "4", "-n", "100000000"}
		}, client: func(p string) []string {
			return []string{"ibv_srq_pingpong", "-d", device, "-g", gid, "-p", p, "-q", "4", "-n", "100000000", addr}
		}},
	}
	for _, p := range pairs {
		w.startPair(p)
	}
	// A pair that looked connected may have lost it since (see startPair):
	// look again once every pair runs.
	for _, p := range pairs {
		if w.connected(p) {
			continue
		}
		qps, _, _ := runStatus("rdma", "res", "show", "qp")
		t.Logf("%s lost its connection after it was made:\n%sserver: %s\nclient: %s",
			p.s.Args[0], qps, w.drop(p.s), w.drop(p.c))
		w.startPair(p)
	}
	waitFor(t, 30*time.Second, "14 RC QPs in RTS", func() bool { return rcInRTS(t) >= 14 })
	return w
}

// TestWithRunningWorkloads runs the tests that look at what running
// programs hold (rdma res and its filters against iproute2, the legacy
// debugfs layout, parse of live filesystems, keys withheld from the
// unprivileged) against one startAll set, paused (SIGSTOP) so that each
// sees a still picture. Each of them used to start its own: 20 s under
// the emulator each time, six times per kernel. None of them changes
// what the programs hold.
func TestWithRunningWorkloads(t *testing.T) {
	needDevice(t)
	w := startAll(t)
	defer w.stop()
	w.signal(syscall.SIGSTOP)
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"ResMatchesIproute2", resMatchesIproute2},
		{"ResTextMatchesIproute2", resTextMatchesIproute2},
		{"ResFiltersMatchIproute2", resFiltersMatchIproute2},
		{"KeysWithheldWithoutNetAdmin", keysWithheldWithoutNetAdmin},
		{"LegacyLayoutFromLiveData", legacyLayoutFromLiveData},
		{"ParseOfLiveKernelFilesystemsReturns", parseOfLiveKernelFilesystemsReturns},
		{"PidSelectsTheProcessOfEveryThread", func(t *testing.T) { pidSelectsTheProcessOfEveryThread(t, w) }},
	} {
		t.Run(c.name, c.test)
	}
}

// startPair starts p's server, then its client once the server listens,
// and waits until each of them has held its RC QPs in RTS for 3 s. Under
// emulation a connection setup sometimes fails: a perftest client once met
// RDMA_CM_EVENT_REJECTED, status 8 (no listener: perftest -R listens twice),
// and once an ib_write_lat pair had both QPs in RTS, then only the client's,
// for minutes. So a pair that dies or does not connect is killed and started
// again on a new port, three times in all.
func (w *workload) startPair(p *pair) {
	t := w.t
	t.Helper()
	for {
		p.attempts++
		ports += 10 // a new port: never meet the TIME_WAIT sockets of the one before
		port := fmt.Sprint(ports)
		sargs, cargs := p.server(port), p.client(port)
		p.s = w.start(sargs[0], sargs[1:]...)
		waitListening(t, port)
		// A second more, as the tests always did: clients that came at once
		// after the listen were the ones that failed.
		time.Sleep(time.Second)
		p.c = w.start(cargs[0], cargs[1:]...)
		began := time.Now()
		var heldSince time.Time
		for !exited(p.s) && !exited(p.c) && time.Since(began) < 60*time.Second {
			switch {
			case !w.connected(p):
				heldSince = time.Time{}
			case heldSince.IsZero():
				heldSince = time.Now()
			case time.Since(heldSince) >= 3*time.Second:
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		qps, _, _ := runStatus("rdma", "res", "show", "qp")
		t.Logf("attempt %d of %s did not connect (after %v; server exited %v, client exited %v):\n%sserver: %s\nclient: %s",
			p.attempts, strings.Join(sargs, " "), time.Since(began).Round(time.Millisecond), exited(p.s), exited(p.c),
			qps, w.drop(p.s), w.drop(p.c))
		if p.attempts >= 3 {
			t.Fatalf("%s did not connect in 3 attempts", sargs[0])
		}
	}
}

// connected reports whether p's server and client each have p.qps RC QPs
// in RTS.
func (w *workload) connected(p *pair) bool {
	server, client := threads(p.s), threads(p.c)
	ns, nc := 0, 0
	for _, r := range snapshot(w.t, rdma.ResQP) {
		if r.QPType != rdma.QPTypeRC || r.QPState != rdma.QPStateRTS {
			continue
		}
		// RES_PID is the thread that made the QP.
		switch {
		case server[r.Owner.PID]:
			ns++
		case client[r.Owner.PID]:
			nc++
		}
	}
	return ns >= p.qps && nc >= p.qps
}

// threads returns the ids of p's threads.
func threads(p *exec.Cmd) map[uint32]bool {
	ids := map[uint32]bool{uint32(p.Process.Pid): true}
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Process.Pid))
	for _, e := range entries {
		if id, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			ids[uint32(id)] = true
		}
	}
	return ids
}

// rcInRTS counts the RC QPs in RTS.
func rcInRTS(t *testing.T) int {
	n := 0
	for _, r := range snapshot(t, rdma.ResQP) {
		if r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
			n++
		}
	}
	return n
}

// exited reports whether p has ended (it is a zombie until reaped).
func exited(p *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
	i := bytes.LastIndexByte(b, ')')
	return err != nil || i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// drop kills p's process group, reaps it, forgets it, and returns its output.
func (w *workload) drop(p *exec.Cmd) string {
	_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
	_ = p.Wait()
	for i := range w.procs {
		if w.procs[i] == p {
			out := w.logs[i].String()
			w.procs = append(w.procs[:i], w.procs[i+1:]...)
			w.logs = append(w.logs[:i], w.logs[i+1:]...)
			return out
		}
	}
	return ""
}

// waitListening waits until every port has a listener: an rdma_cm ID in
// LISTEN (rping, perftest -R) or a TCP socket (ibv_*_pingpong).
func waitListening(t *testing.T, ports ...string) {
	t.Helper()
	waitFor(t, 60*time.Second, "the servers to listen on "+strings.Join(ports, ", "), func() bool {
		listening := map[string]bool{}
		for _, r := range snapshot(t, rdma.ResCMID) {
			if r.CMState == rdma.CMListen {
				listening[fmt.Sprint(r.Src.Port())] = true
			}
		}
		for _, fs := range tcpSockets() {
			if fs[3] == "0A" { // TCP_LISTEN
				if i := strings.LastIndexByte(fs[1], ':'); i >= 0 {
					if p, err := strconv.ParseUint(fs[1][i+1:], 16, 16); err == nil {
						listening[fmt.Sprint(p)] = true
					}
				}
			}
		}
		for _, p := range ports {
			if !listening[p] {
				return false
			}
		}
		return true
	})
}

// tcpSockets are the fields of each line of /proc/net/tcp and tcp6 that
// has a state (the fourth field).
func tcpSockets() [][]string {
	var out [][]string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(line); len(fs) > 3 && fs[0] != "sl" {
				out = append(out, fs)
			}
		}
	}
	return out
}

func snapshot(t *testing.T, typ rdma.ResType) []rdma.Resource {
	t.Helper()
	rs, err := dumpable(typ)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// dumpable is every device's resources of type typ, or the error of a
// kernel that cannot dump them.
func dumpable(typ rdma.ResType) ([]rdma.Resource, error) {
	c, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	return c.Resources(typ, devs)
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// run runs a command and returns its stdout, failing the test on error.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, stderr, err := runStatus(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return out
}

func runStatus(name string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// keep leaves a file for the host in the exchange directory.
func keep(t *testing.T, name string, data []byte) {
	if *outDir == "" {
		return
	}
	path := filepath.Join(*outDir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStartPairRetriesAFailedPair: a client that fails is dropped with its
// server, and the pair is started again on a new port.
func TestStartPairRetriesAFailedPair(t *testing.T) {
	needDevice(t)
	w := &workload{t: t}
	defer w.stop()
	var clientPorts []string
	p := &pair{qps: 1,
		server: func(p string) []string { return []string{"rping", "-s", "-a", addr, "-p", p, "-C", "10000000"} },
		client: func(p string) []string {
			clientPorts = append(clientPorts, p)
			if len(clientPorts) == 1 {
				return []string{"false"} // fails at once
			}
			return []string{"rping", "-c", "-a", addr, "-p", p, "-C", "10000000"}
		}}
	w.startPair(p)
	if len(clientPorts) != 2 || clientPorts[0] == clientPorts[1] || p.attempts != 2 {
		t.Errorf("%d attempts, clients started on ports %v, want two attempts on two ports", p.attempts, clientPorts)
	}
	if len(w.procs) != 2 {
		t.Errorf("%d processes kept, want the second attempt's server and client", len(w.procs))
	}
	if !w.connected(p) {
		t.Error("the second attempt is not connected")
	}
}

// startHolder starts leakqp holding a QP (and its PD, CQ and MR) on dev,
// and returns it once it holds them, with the QP's lqpn. The test's end
// kills it.
func startHolder(t *testing.T, dev string) (*exec.Cmd, string) {
	t.Helper()
	holder := exec.Command(filepath.Join(*workloads, "leakqp"), dev, "hold")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	lqpn, ok := strings.CutPrefix(strings.TrimSpace(line), "lqpn ")
	if err != nil || !ok {
		t.Fatalf("leakqp %s hold printed %q (%v), want its lqpn", dev, line, err)
	}
	return holder, lqpn
}
