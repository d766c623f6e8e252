//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"net/netip"
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

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestFailuresAreTracedWithOwnersAndPeers runs one trace through a clean
// disconnect and two failures and compares each event with what the kernel
// and the programs say themselves:
//   - an rping pair over rxe that runs to its end and disconnects: each
//     side's QP moved to ERR once (its modify to ERR; rxe_qp_error, which
//     rxe fails QPs with, also carries out the modify and flushes the QP
//     after it, and neither is a second move);
//   - a port flap under a connected rping pair (ip link set the rxe netdev
//     down, then up): PORT_ERR then PORT_ACTIVE on rxe0/1, as sysfs saw the
//     port's state, the first naming both rping processes among the owners
//     of the objects on the port; rxe fails the rping QP that was sending
//     (its first error completion, its move to ERR, the counts at its
//     destroy), named with its owner and its peer as `rdma res` gave them
//     before the flap (lqpn, rqpn), and with the status rping printed;
//   - an ib_write_bw -R server killed over siw (where it is built): the
//     completion error the client prints and the QP_FATAL async event siw
//     raises, with the client as owner and the QP the client printed.
func TestFailuresAreTracedWithOwnersAndPeers(t *testing.T) {
	needDevice(t)
	needModuleBTF(t) // as startTrace does: before siw is set up for nothing
	// Registered first, so it runs last, once the rping pair is gone: rxe0
	// made again. On 6.1, after this test every rdma_cm connect over rxe0
	// timed out (the CM's requests went out on the GSI QP, in RTS, and no
	// answer came) until rxe0 was made again; a plain flap with no
	// traffic does not do it. Where inside rxe it breaks is not known.
	t.Cleanup(func() {
		gsi := run(t, "rdma", "res", "show", "qp", "link", device+"/1", "lqpn", "1")
		t.Logf("after the test, rxe0's GSI QP: %s", bytes.TrimSpace(gsi))
		// rdma itself once died of SIGSEGV here after other tests (6.1
		// and 6.12, the device deleted or not): the device's absence is
		// what matters, and a second try says whether it went.
		for try := 1; ; try++ {
			_, stderr, err := runStatus("rdma", "link", "delete", device)
			if _, gone := os.Stat("/sys/class/infiniband/" + device); gone != nil {
				if err != nil {
					t.Logf("rdma link delete %s: %v: %s (the device went)", device, err, stderr)
				}
				break
			}
			if try == 2 {
				t.Errorf("rdma link delete %s: %v: %s", device, err, stderr)
				break
			}
		}
		if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil {
			t.Errorf("%s after deleting %s: %v\n%s", *rdmaUp, device, err, out)
		}
	})
	// siw before the trace: the hooks in a module attach when it is loaded.
	siw := filepath.Join(*kmodDir, release(t), "siw.ko")
	_, err := os.Stat(siw)
	haveSiw := err == nil
	// On 6.1 under the emulator, perftest's pair over siw connects and
	// then breaks in its own exchange before any traffic (the server:
	// "Bad wc status -- 5", a flush), in every attempt of a landing run
	// (five, 3 minutes); 6.12 and sid connect at the first (sid broke the
	// same way once, on a host loaded further: the break follows the load).
	siwBreaks := strings.HasPrefix(release(t), "6.1.")
	if haveSiw && !siwBreaks {
		needSiw(t)
	}
	tr := startTrace(t)
	var bye rpingPair
	t.Run("rping disconnects", func(t *testing.T) { bye = rpingToTheEnd(t) })
	var flap portFlap
	var deadSiw deadPeer
	t.Run("port flap", func(t *testing.T) { flap = flapPort(t) })
	t.Run("peer dies over siw", func(t *testing.T) {
		if !haveSiw {
			t.Skipf("no %s (guest/siw.sh builds it; make e2e runs it)", siw)
		}
		if siwBreaks {
			t.Skipf("kernel %s: perftest's pair over siw breaks in its own exchange under the emulator (wc status 5 before any traffic); the dead peer over siw is checked on 6.12 and sid", release(t))
		}
		deadSiw = killPeer(t, "siw0", siwAddr, func(client bool) []string {
			a := []string{"ib_write_bw", "-d", "siw0", "-R", "-p", "18541", "-D", "120"}
			if client {
				a = append(a, siwAddr)
			}
			return a
		})
	})
	evs := tr.stop()
	t.Run("a disconnect moves each QP to ERR once", func(t *testing.T) {
		if bye.server == 0 {
			t.Skip("no rping pair ran to its end")
		}
		checkOneMoveToErr(t, evs, bye)
	})
	t.Run("the port's events name the owners on it", func(t *testing.T) {
		if flap.server == 0 {
			t.Skip("no port flap")
		}
		checkPortFlap(t, evs, flap)
	})
	t.Run("rxe fails the rping QP that was sending, naming its peer", func(t *testing.T) {
		if flap.server == 0 {
			t.Skip("no port flap")
		}
		checkFlapQPError(t, evs, flap)
	})
	t.Run("siw's QP error and async event", func(t *testing.T) {
		if deadSiw.client == 0 {
			t.Skip("no dead peer over siw")
		}
		checkDeadPeer(t, evs, deadSiw)
		if e := findEvent(evs, func(e *traced) bool {
			return e.Kind == rdma.EvAsync && e.Type == rdma.ResQP && e.DevName == "siw0" && e.LQPN == deadSiw.qpn
		}); e == nil {
			t.Errorf("no async event of the client's QP %d on siw0 (siw raises QP_FATAL when a connection breaks)", deadSiw.qpn)
		} else if e.process() != fmt.Sprint(deadSiw.client) || e.Fault.IBEvent != 1 {
			t.Errorf("siw's async event: %s, want QP_FATAL owned by ib_write_bw[%d]", e, deadSiw.client)
		}
	})
}

// rpingPair is an rping server and client that ran to their end.
type rpingPair struct{ server, client int }

// rpingToTheEnd runs an rping pair over rxe for a few pings: the client
// disconnects, the server too once told.
func rpingToTheEnd(t *testing.T) rpingPair {
	const port = "7441"
	var outs []*bytes.Buffer // each rping's output, read once it has ended
	said := func() string {
		var b strings.Builder
		for _, o := range outs {
			b.Write(o.Bytes())
		}
		return b.String()
	}
	start := func(args ...string) (*exec.Cmd, chan error) {
		c := exec.Command("rping", append(args, "-a", addr, "-p", port, "-C", "3")...)
		// One writer for both pipes: exec copies them in one goroutine.
		said := &bytes.Buffer{}
		c.Stdout, c.Stderr = said, said
		outs = append(outs, said)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill() })
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		return c, done
	}
	server, serverDone := start("-s")
	waitListening(t, port)
	client, clientDone := start("-c")
	p := rpingPair{server: server.Process.Pid, client: client.Process.Pid}
	// Both waited for before their output is read: a killed one too.
	var problems []string
	deadline := time.After(60 * time.Second)
	for _, w := range []struct {
		name string
		c    *exec.Cmd
		done chan error
	}{{"client", client, clientDone}, {"server", server, serverDone}} {
		select {
		case err := <-w.done:
			if err != nil {
				problems = append(problems, fmt.Sprintf("rping's %s: %v", w.name, err))
			}
		case <-deadline:
			_ = w.c.Process.Kill()
			<-w.done
			problems = append(problems, "rping's "+w.name+" did not end within 60 s of 3 pings")
			deadline = time.After(0)
		}
	}
	if problems != nil {
		t.Fatalf("%s\n%s", strings.Join(problems, "; "), said())
	}
	return p
}

// checkOneMoveToErr: each of the pair's QPs (those it modified on rxe0)
// has exactly one failure line that says it moved to ERR (QP_ERR, the
// words why and the exporter count): its modify to ERR at the disconnect,
// not that and rxe_qp_error's run inside it or after it as well.
func checkOneMoveToErr(t *testing.T, evs []traced, p rpingPair) {
	for _, pid := range []int{p.server, p.client} {
		owner := fmt.Sprint(pid)
		moves := map[uint32][]string{} // lqpn: its QP_ERR lines
		for i := range evs {
			e := &evs[i]
			if e.process() != owner || e.DevName != device || !e.Given(rdma.HasLQPN) ||
				!(e.Kind == rdma.EvModify && e.Type == rdma.ResQP || e.Kind == rdma.EvQPError) {
				continue
			}
			if _, seen := moves[e.LQPN]; !seen {
				moves[e.LQPN] = []string{}
			}
			if f, ok := e.Failure(); ok && f.What == "QP_ERR" {
				moves[e.LQPN] = append(moves[e.LQPN], e.line)
			}
		}
		if len(moves) == 0 {
			t.Errorf("rping[%d]: no QP of it on %s in the trace", pid, device)
		}
		for lqpn, lines := range moves {
			if len(lines) != 1 {
				t.Errorf("rping[%d]'s QP %d: %d moves to ERR, want 1:\n%s", pid, lqpn, len(lines), strings.Join(lines, "\n"))
			}
		}
	}
}

// portFlap is what flapPort saw: the rping processes and the port's state
// in sysfs after each step.
type portFlap struct {
	server, client int
	qps            []rdma.Resource // the pair's QPs in RTS, as rdma res listed them
	said           []*bytes.Buffer // what each rping wrote to stderr (read once they are gone)
	down, up       string
}

func portState(t *testing.T) string {
	b, err := os.ReadFile("/sys/class/infiniband/" + device + "/ports/1/state")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func flapPort(t *testing.T) portFlap {
	const port = "7440"
	var f portFlap
	start := func(args ...string) int {
		c := exec.Command("rping", args...)
		said := &bytes.Buffer{} // one each: exec copies each pipe in a goroutine of its own
		f.said = append(f.said, said)
		c.Stderr = said
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	f.server = start("-s", "-a", addr, "-p", port, "-C", "100000000")
	waitListening(t, port)
	f.client = start("-c", "-a", addr, "-p", port, "-C", "100000000")
	waitFor(t, 30*time.Second, "the rping pair's QPs in RTS", func() bool {
		f.qps = f.qps[:0]
		for _, r := range rdmaResources(t, "rdma -j res show qp", run(t, "rdma", "-j", "res", "show", "qp")) {
			if pid := int(r.Owner.PID); (pid == f.server || pid == f.client) && r.QPState == rdma.QPStateRTS {
				f.qps = append(f.qps, r)
			}
		}
		return len(f.qps) >= 2
	})
	run(t, "ip", "link", "set", "veth0", "down")
	waitFor(t, 10*time.Second, "rxe0/1 DOWN", func() bool { return strings.Contains(portState(t), "DOWN") })
	f.down = portState(t)
	run(t, "ip", "link", "set", "veth0", "up")
	// rdma-up.sh waits for the port and its IPv4 GID, which later tests need.
	if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil {
		t.Fatalf("%s after the flap: %v\n%s", *rdmaUp, err, out)
	}
	f.up = portState(t)
	keep(t, "failures/ibv_devinfo.txt", run(t, "ibv_devinfo", "-d", device))
	return f
}

func checkPortFlap(t *testing.T, evs []traced, f portFlap) {
	t.Logf("sysfs: %s after ip link set down, %s after up", f.down, f.up)
	var errAt, activeAt int = -1, -1
	for i := range evs {
		e := &evs[i]
		if !e.IsPortEvent() || e.DevName != device || e.Port != 1 {
			continue
		}
		switch {
		case e.Fault.IBEvent == rdma.IBEventPortErr && errAt < 0:
			errAt = i
		case e.Fault.IBEvent == rdma.IBEventPortActive && errAt >= 0 && activeAt < 0:
			activeAt = i
		}
	}
	if errAt < 0 || activeAt < 0 {
		t.Fatalf("want PORT_ERR then PORT_ACTIVE on %s/1 (sysfs said %s, then %s); the port's events: %v", device, f.down, f.up,
			filterEvents(evs, func(e *traced) bool { return e.Kind == rdma.EvAsync }))
	}
	e := evs[errAt]
	t.Logf("%s", e)
	// The objects on the port come from a listing taken when the event is
	// read, a few milliseconds after the kernel raised it: an rping whose
	// QP failed and that tore it down in between is not on the port any
	// more. Each of the pair is named, or its QP was destroyed within a
	// second of the PORT_ERR; at least one is named.
	named := 0
	for _, pid := range []int{f.server, f.client} {
		want := fmt.Sprintf(" of rping[%d]", pid)
		found := false
		for _, o := range e.Fault.OnPort {
			found = found || strings.HasSuffix(o, want) && strings.Contains(o, " qp")
		}
		if found {
			named++
			continue
		}
		gone := findEvent(evs, func(d *traced) bool {
			return d.Kind == rdma.EvDestroy && d.Type == rdma.ResQP && d.process() == fmt.Sprint(pid) &&
				d.Mono >= e.Mono && d.Mono-e.Mono < uint64(time.Second)
		})
		if gone == nil {
			t.Errorf("PORT_ERR's objects %q name no QP of rping[%d], which destroyed none within a second of it", e.Fault.OnPort, pid)
		} else {
			t.Logf("rping[%d]'s QP was gone before the port's objects were listed: %s", pid, gone)
		}
	}
	if named == 0 {
		t.Errorf("PORT_ERR's objects %q name no QP of either rping (%d, %d)", e.Fault.OnPort, f.server, f.client)
	}
	if e.Actor.Comm != "ip" {
		t.Logf("PORT_ERR raised by %s, not ip (the netdev notifier ran elsewhere)", e.Actor.Comm)
	}
}

// checkFlapQPError: the QPs rxe failed when the port went down include
// one of the rping pair's, reported with its owner, its peer as rdma res
// listed it before the flap, its move to ERR and its counts at destroy;
// a status rping printed ("cq completion failed status N": it prints all
// but flushes) is one the trace counted.
func checkFlapQPError(t *testing.T, evs []traced, f portFlap) {
	var said strings.Builder
	for _, b := range f.said {
		said.Write(b.Bytes())
	}
	t.Logf("rdma res before the flap: %v; rping said: %q", f.qps, said.String())
	found := false
	for _, q := range f.qps {
		mine := func(e *traced) bool {
			return e.Kind == rdma.EvQPError && e.DevName == device && e.LQPN == q.LQPN && e.process() == fmt.Sprint(q.Owner.PID)
		}
		first := findEvent(evs, func(e *traced) bool { return mine(e) && e.Fault.Report == rdma.QPErrFirst })
		if first == nil {
			continue
		}
		found = true
		t.Logf("%s", first)
		if !q.Given(rdma.HasRQPN) || !first.Fault.HasPeer() || first.Fault.PeerQPN != q.RQPN ||
			first.Fault.PeerGID != netip.MustParseAddr("::ffff:"+addr) {
			t.Errorf("lqpn %d's first error names peer %v qpn %d; rdma res said rqpn %d (given: %v), GID ::ffff:%s",
				q.LQPN, first.Fault.PeerGID, first.Fault.PeerQPN, q.RQPN, q.Given(rdma.HasRQPN), addr)
		}
		// Its move to ERR: rxe's own (a send that failed on the dead
		// port), or the modify of rping's disconnect once rdma_cm told it
		// (6.12), after which rxe flushes what was posted.
		driver := findEvent(evs, func(e *traced) bool { return mine(e) && e.Fault.Report == rdma.QPErrDriver })
		modify := findEvent(evs, func(e *traced) bool {
			return e.Kind == rdma.EvModify && e.DevName == device && e.LQPN == q.LQPN && e.Given(rdma.HasState) && e.QPState == rdma.QPStateErr
		})
		if driver == nil && modify == nil {
			t.Errorf("lqpn %d: neither rxe's move to ERR (qp-error driver) nor a modify to ERR was traced", q.LQPN)
		}
		counted := map[int]bool{}
		for _, e := range filterEvents(evs, func(e *traced) bool { return mine(e) && e.Fault.Report == rdma.QPErrTotal }) {
			counted[int(e.Fault.WCStatus)] = e.Fault.Count > 0
		}
		if !counted[int(first.Fault.WCStatus)] {
			t.Errorf("no count of %s at lqpn %d's destroy: %v", first.Fault.WCStatus, q.LQPN, counted)
		}
		for _, m := range regexp.MustCompile(`completion failed status (\d+)`).FindAllStringSubmatch(said.String(), -1) {
			n, _ := strconv.Atoi(m[1])
			if !counted[n] && findEvent(evs, func(e *traced) bool {
				return e.Kind == rdma.EvQPError && e.Fault.Report == rdma.QPErrTotal && int(e.Fault.WCStatus) == n
			}) == nil {
				t.Errorf("rping said %q; the trace counted no completion of status %d", m[0], n)
			}
		}
	}
	if !found {
		t.Errorf("no first error of the rping pair's QPs %v; the QP errors: %v", f.qps,
			filterEvents(evs, func(e *traced) bool { return e.Kind == rdma.EvQPError }))
	}
}

// deadPeer is what killPeer saw: the client's pid, its QP and the dead
// server's as the client printed them, and all it printed.
type deadPeer struct {
	dev          string
	client       int
	qpn, peerQPN uint32
	gid          netip.Addr
	said         string
	// hung: the client did not end within 60 s of its server's death
	// (perftest over siw on 6.12, once, its QP already flushed).
	hung bool
}

// qpnRE finds the QP numbers perftest and ibv_rc_pingpong print:
// "local address: LID 0000 QPN 0x0003 ...", "remote address:  LID 0x0000, QPN 0x000012, ...".
var qpnRE = regexp.MustCompile(`(local|remote) address: .*QPN 0x([0-9a-fA-F]+)`)

// killPeer runs a server and its client (argv with the port, and the
// server's address for the client), SIGKILLs the server once the client
// spins on its CQ (connected, moving data), and waits for the client to
// fail. A client that never connected (rdma_connect failed: on a loaded
// machine siw's connect can time out before the server accepts) is a
// failed start, not the failure under test: the pair starts again, up to
// five times, two seconds apart (three quick attempts in a row have all
// failed on 6.1 and 6.12, a later run in the same guest then passing).
func killPeer(t *testing.T, dev string, ip string, argv func(client bool) []string) deadPeer {
	t.Helper()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		d, problems := killPeerOnce(t, dev, ip, argv)
		if len(problems) == 0 {
			return d
		}
		if attempt < attempts && d.qpn == 0 {
			// A client that printed no QPN never connected: its server
			// exited first, rdma_connect failed, or (6.1 under TCG) the
			// client spun on its CQ before its connection was
			// established and the kill came first, so rdma_cm rejected
			// it ("Unexpected CM event ... 8"). siw connects over a
			// kernel TCP socket bound to the port rdma_cm chose: the TCP
			// states say whether ports were short.
			t.Logf("attempt %d: the pair never connected, starting it again (TCP sockets: %s): %s", attempt, tcpStates(), problems[0])
			time.Sleep(2 * time.Second)
			continue
		}
		// A client that hangs is the workload's fault, not the trace's:
		// its QP's events are those of a pid the next pair does not have.
		if attempt < attempts && d.hung {
			t.Logf("attempt %d: the client hung, starting the pair again: %s", attempt, problems[0])
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
		return d
	}
}

// killPeerOnce is one try of killPeer; it returns what went wrong.
func killPeerOnce(t *testing.T, dev string, ip string, argv func(client bool) []string) (deadPeer, []string) {
	t.Helper()
	var problems []string
	sa := argv(false)
	server := exec.Command(sa[0], sa[1:]...)
	var serverSaid bytes.Buffer
	server.Stdout, server.Stderr = &serverSaid, &serverSaid
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- server.Wait() }()
	t.Cleanup(func() { _ = server.Process.Kill(); <-serverDone })
	port := sa[slices.Index(sa, "-p")+1]
	waitListening(t, port)
	// A second more, as startPair waits: perftest -R listens twice, and a
	// client that comes at once after the first listen meets no listener
	// (siw's rdma_connect then fails at once, or hangs), the more often
	// the busier the machine.
	time.Sleep(time.Second)
	select {
	case err := <-serverDone:
		serverDone <- err
		d := deadPeer{dev: dev, said: "the server exited before its client started (" + fmt.Sprint(err) + "):\n" + serverSaid.String()}
		return d, []string{d.said}
	default:
	}
	said := &lockedBuffer{} // read while the client runs
	// Line-buffered, so that what it printed is there if it is killed
	// (a pipe's stdio buffer dies with it: its QPN lines were lost).
	ca := append([]string{"stdbuf", "-oL", "-eL"}, argv(true)...)
	client := exec.Command(ca[0], ca[1:]...)
	client.Stdout, client.Stderr = said, said
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Process.Kill() })
	d := deadPeer{dev: dev, client: client.Process.Pid, gid: netip.MustParseAddr("::ffff:" + ip)}
	done := make(chan error, 1)
	go func() { done <- client.Wait() }()
	// Connected means the client's and the server's RC QPs are in RTS and
	// the client spins on its CQ (its QPN lines come only at its exit:
	// its stdout is a pipe). A client that only spins may still be
	// connecting, and one whose server is killed then hangs for good (6.1
	// over siw on a loaded machine), which cost a minute's wait before
	// the pair was started again.
	connected := func() bool {
		var s, c bool
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
				s = s || threads(server)[r.Owner.PID]
				c = c || threads(client)[r.Owner.PID]
			}
		}
		return s && c && busy(t, client.Process.Pid)
	}
	stopServer := func() { // before the next attempt listens on its port
		_ = server.Process.Kill()
		err := <-serverDone
		serverDone <- err
	}
	for deadline := time.Now().Add(30 * time.Second); !connected(); {
		select {
		case err := <-done:
			stopServer()
			d.said = said.String()
			return d, []string{fmt.Sprintf("%s's client exited (%v) before it connected:\n%s\nits server said:\n%s", sa[0], err, d.said, serverSaid.String())}
		default:
		}
		if time.Now().After(deadline) {
			_ = client.Process.Kill()
			<-done
			stopServer()
			d.said = said.String()
			qps, _, _ := runStatus("rdma", "res", "show", "qp", "link", dev+"/1")
			return d, []string{fmt.Sprintf("%s's client did not connect within 30 s (%s's QPs then: %s):\n%s\nits server said:\n%s", sa[0], dev, bytes.TrimSpace(qps), d.said, serverSaid.String())}
		}
		time.Sleep(250 * time.Millisecond)
	}
	_ = server.Process.Signal(syscall.SIGKILL)
	serverErr := <-serverDone
	serverDone <- serverErr
	select {
	case err := <-done:
		if err == nil {
			problems = append(problems, fmt.Sprintf("%s's client succeeded with its server killed:\n%s", sa[0], said.String()))
		}
	case <-time.After(60 * time.Second):
		_ = client.Process.Kill()
		<-done
		d.hung = true
		problems = append(problems, fmt.Sprintf("%s's client did not fail within 60 s of its server's death:\n%s", sa[0], said.String()))
	}
	d.said = said.String()
	keep(t, filepath.Join("failures", dev+"-client.txt"), []byte(d.said))
	keep(t, filepath.Join("failures", dev+"-server.txt"), serverSaid.Bytes())
	for _, m := range qpnRE.FindAllStringSubmatch(d.said, -1) {
		n, _ := strconv.ParseUint(m[2], 16, 32)
		if m[1] == "local" {
			d.qpn = uint32(n)
		} else {
			d.peerQPN = uint32(n)
		}
	}
	if d.qpn == 0 || d.peerQPN == 0 {
		problems = append(problems, fmt.Sprintf("%s's client printed no local and remote QPN:\n%s\nits server said:\n%s", sa[0], d.said, serverSaid.String()))
	}
	return d, problems
}

// busy says whether process pid ran on a CPU for most of the next half
// second (utime and stime of /proc/PID/stat, in clock ticks of 10 ms).
func busy(t *testing.T, pid int) bool {
	ticks := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		var u, s int
		if len(f) > 12 {
			fmt.Sscan(f[11], &u)
			fmt.Sscan(f[12], &s)
		}
		return u + s
	}
	before := ticks()
	time.Sleep(500 * time.Millisecond)
	return ticks()-before >= 30
}

func checkDeadPeer(t *testing.T, evs []traced, d deadPeer) {
	mine := func(e *traced) bool {
		return e.Kind == rdma.EvQPError && e.DevName == d.dev && e.LQPN == d.qpn && e.process() == fmt.Sprint(d.client)
	}
	first := findEvent(evs, func(e *traced) bool { return mine(e) && e.Fault.Report == rdma.QPErrFirst })
	if first == nil {
		t.Fatalf("no first error of the client's QP %d on %s (pid %d); the QP errors: %v; the client said:\n%s",
			d.qpn, d.dev, d.client, filterEvents(evs, func(e *traced) bool { return e.Kind == rdma.EvQPError }), d.said)
	}
	t.Logf("%s", first)
	// The client prints the status of the completion it failed on
	// (perftest "Failed status 2", ibv_rc_pingpong "Failed status
	// transport retry counter exceeded (12)"): one the trace counted on
	// the QP. A client whose post failed first, its QP already in error
	// (perftest "Couldn't post send", siw on sid once), saw no
	// completion: the first error above is what there is to find.
	postFailed := !strings.Contains(d.said, "Failed status") && strings.Contains(d.said, "Couldn't post")
	if postFailed {
		t.Logf("the client failed posting to its QP, already in error, before any completion")
	}
	var statuses []string
	for _, e := range filterEvents(evs, func(e *traced) bool { return mine(e) && e.Fault.Report != rdma.QPErrDriver }) {
		n := int(e.Fault.WCStatus)
		statuses = append(statuses, e.Fault.WCStatus.String())
		if strings.Contains(d.said, fmt.Sprintf("status %d", n)) || strings.Contains(d.said, fmt.Sprintf("%s (%d)", e.Fault.WCStatus.Message(), n)) {
			statuses = nil
			break
		}
	}
	if statuses != nil && !postFailed {
		t.Errorf("the client failed on a status the trace did not count on its QP (%v):\n%s", statuses, d.said)
	}
	total := findEvent(evs, func(e *traced) bool {
		return mine(e) && e.Fault.Report == rdma.QPErrTotal && e.Fault.WCStatus == first.Fault.WCStatus
	})
	if total == nil || total.Fault.Count < 1 {
		t.Errorf("no count of %s at the client's QP %d's destroy: %v", first.Fault.WCStatus, d.qpn, total)
	}
}

func findEvent(evs []traced, match func(*traced) bool) *traced {
	for i := range evs {
		if match(&evs[i]) {
			return &evs[i]
		}
	}
	return nil
}

func filterEvents(evs []traced, match func(*traced) bool) []traced {
	var out []traced
	for i := range evs {
		if match(&evs[i]) {
			out = append(out, evs[i])
		}
	}
	return out
}

// tcpStates counts the host's TCP sockets by state (/proc/net/tcp and
// tcp6), as "ESTABLISHED 3, LISTEN 5, TIME_WAIT 120".
func tcpStates() string {
	names := map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
		"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}
	count := map[string]int{}
	for _, fs := range tcpSockets() {
		count[cmp.Or(names[fs[3]], fs[3])]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%s %d", k, count[k]))
	}
	return strings.Join(out, ", ")
}
