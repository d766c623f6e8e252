//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// siwAddr is siw0's address, on a veth pair of its own (veth2/veth3): on
// rxe0's veth0, rdma_cm could resolve 10.99.0.1 to either device.
const siwAddr = "10.99.1.1"

var siwOnce sync.Once

// needSiw loads soft-iWARP, which Debian does not build (guest/siw.sh
// builds it against the guest kernel's headers), once, and creates siw0 on
// veth2 for the test, deleting it at the test's end: later tests list
// every device, and siw0 has what rxe has not (5.10's `rdma statistic`
// answers EINVAL for it).
func needSiw(t *testing.T) {
	t.Helper()
	needDevice(t) // the RDMA core and the rdma tool's setup
	ko := filepath.Join(*kmodDir, release(t), "siw.ko")
	if _, err := os.Stat(ko); err != nil {
		if why, err := os.ReadFile(filepath.Join(filepath.Dir(ko), "unbuildable-siw")); err == nil {
			t.Skipf("no siw for kernel %s: %s", release(t), strings.TrimSpace(string(why)))
		}
		t.Fatalf("%v: build it with guest/siw.sh (make e2e does)", err)
	}
	var err error
	siwOnce.Do(func() {
		// siw's crc32c comes through the crypto API, which loads its
		// module on demand; libcrc32c where the kernel has it.
		_, _, _ = runStatus("modprobe", "-a", "crc32c_generic", "libcrc32c")
		// A test run again in the same guest (the landing path's) finds
		// siw and the veths of the first run's process.
		var steps [][]string
		if _, err := os.Stat("/sys/module/siw"); err != nil {
			steps = append(steps, []string{"insmod", ko})
		}
		if _, err := os.Stat("/sys/class/net/veth2"); err != nil {
			steps = append(steps,
				[]string{"ip", "link", "add", "veth2", "type", "veth", "peer", "name", "veth3"},
				[]string{"ip", "addr", "add", siwAddr + "/24", "dev", "veth2"},
				[]string{"ip", "link", "set", "veth2", "up"},
				[]string{"ip", "link", "set", "veth3", "up"})
		}
		for _, s := range steps {
			if _, stderr, e := runStatus(s[0], s[1:]...); e != nil {
				err = fmt.Errorf("%s: %v: %s", strings.Join(s, " "), e, stderr)
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, "rdma", "link", "add", "siw0", "type", "siw", "netdev", "veth2")
	// Registered first, so it runs after the test's own cleanups have
	// ended its rping processes.
	t.Cleanup(func() {
		if _, stderr, err := runStatus("rdma", "link", "delete", "siw0"); err != nil {
			t.Errorf("rdma link delete siw0: %v: %s", err, stderr)
		}
	})
}

type portRow struct {
	Proto, Stack, State, Comm string
	Src                       string `json:"src-addr"`
	Dst                       string `json:"dst-addr"`
	PID                       int
	Inode                     uint64
	HostPort                  bool `json:"host-port"`
	Ifname                    string
	CMIDN                     *int `json:"cm-idn"`
	PS                        string
}

func portsJSON(t *testing.T, args ...string) []portRow {
	t.Helper()
	out, stderr, err := runStatus(*rdmatraceBin, append([]string{"ports", "-j"}, args...)...)
	if err != nil {
		t.Fatalf("rdmatrace ports -j %v: %v\n%s", args, err, stderr)
	}
	keep(t, "ports/"+strings.ReplaceAll(t.Name(), "/", "_")+".json", out)
	var rows []portRow
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("ports -j: %v\n%s", err, out)
	}
	return rows
}

// startRping starts rping and ends it with the test.
func startRping(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command("rping", args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// ssOwnerless are the 4-tuples of the TCP sockets `ss -tanp` shows on
// port without a process: how siw's kernel sockets look to ss.
func ssOwnerless(t *testing.T, port string) map[string]bool {
	t.Helper()
	out := run(t, "ss", "-tanpe")
	keep(t, "ports/"+t.Name()+".ss.txt", out)
	got := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.Contains(l, "users:(") {
			continue
		}
		if strings.HasSuffix(f[3], ":"+port) || strings.HasSuffix(f[4], ":"+port) {
			got[f[0]+" "+f[3]+" "+strings.Replace(f[4], "*", "0", 1)] = true
		}
	}
	return got
}

// TestPortsNamesIWarpSockets: rping connected over siw0 and a TCP server
// of the test's own on the same host. ss shows siw's listener and both
// connection ends with no process; ports names rping's server and client
// on exactly those 4-tuples, and the test's listener as its own.
func TestPortsNamesIWarpSockets(t *testing.T) {
	needSiw(t)
	const port = "7300"
	server := startRping(t, "-s", "-a", siwAddr, "-p", port, "-C", "100000000")
	waitListening(t, port)
	client := startRping(t, "-c", "-a", siwAddr, "-p", port, "-C", "100000000")
	ln, err := net.Listen("tcp", siwAddr+":7301")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	waitFor(t, 30*time.Second, "rping's two connected cm_ids on siw0", func() bool {
		n := 0
		for _, r := range portsJSON(t, "--dev", "siw0", "--port", port) {
			if r.State == "ESTAB" && r.Stack == "iwarp" {
				n++
			}
		}
		return n == 2
	})
	ownerless := ssOwnerless(t, port)
	keep(t, "ports/ports-table.txt", run(t, *rdmatraceBin, "ports", "--addr", siwAddr))
	rows := portsJSON(t, "--port", port)
	named := map[string]int{}
	for _, r := range rows {
		if r.Stack != "iwarp" || r.Inode == 0 {
			continue
		}
		named[r.State+" "+r.Src+" "+r.Dst] = r.PID
		if r.Comm != "rping" || r.Ifname != "siw0" || r.PS != "TCP" || r.CMIDN == nil || !r.HostPort {
			t.Errorf("iWARP row %+v: want rping's, on siw0, ps TCP, with its cm-idn", r)
		}
		want := server.Process.Pid
		if strings.HasSuffix(r.Dst, ":"+port) {
			want = client.Process.Pid // the client's end: its peer is the server's port
		}
		if r.PID != want {
			t.Errorf("%s %s -> %s: pid %d, want %d", r.State, r.Src, r.Dst, r.PID, want)
		}
	}
	if len(named) != 3 {
		t.Errorf("ports named %d of siw's sockets (%v), want the listener and both ends", len(named), named)
	}
	for tuple := range ownerless {
		if _, ok := named[tuple]; !ok && !strings.HasPrefix(tuple, "TIME-WAIT") {
			t.Errorf("ss shows %q with no process, and ports did not name it (named: %v)", tuple, named)
		}
	}
	if len(ownerless) < 3 {
		t.Errorf("ss showed %d ownerless sockets on %s, want siw's 3: %v", len(ownerless), port, ownerless)
	}
	mine := false
	for _, r := range portsJSON(t, "--port", "7301") {
		mine = mine || (r.Stack == "tcp" && r.State == "LISTEN" && r.PID == os.Getpid())
	}
	if !mine {
		t.Error("ports did not name the test's own TCP listener on 7301")
	}
}

// bindErr binds a TCP socket to ip:port with one bind(2), as a C program
// does (Go's net.Listen tries MPTCP first, then TCP: two binds).
func bindErr(ip string, port int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: netip.MustParseAddr(ip).As4()})
}

// TestPortConflictsOnIWarp: a TCP listener and an rdma_cm listener on siw0
// want one port, in both orders: the second gets EADDRINUSE, and ports
// names the holder. On rxe0 the same pair is no conflict, and --conflicts
// says so with both named.
func TestPortConflictsOnIWarp(t *testing.T) {
	needSiw(t)
	t.Run("tcp first", func(t *testing.T) {
		ln, err := net.Listen("tcp", siwAddr+":7400")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out, err := exec.Command("rping", "-s", "-a", siwAddr, "-p", "7400", "-C", "1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Address already in use") {
			t.Errorf("rping -s on a port a TCP listener holds: %v\n%s; want rdma_listen: Address already in use", err, out)
		}
	})
	t.Run("rdma_cm first", func(t *testing.T) {
		server := startRping(t, "-s", "-a", siwAddr, "-p", "7403", "-C", "1")
		waitListening(t, "7403")
		err := bindErr(siwAddr, 7403)
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("TCP listen on siw's rdma_cm port: %v, want EADDRINUSE", err)
		}
		holders := portsJSON(t, "--port", "7403")
		ok := false
		for _, r := range holders {
			ok = ok || (r.Stack == "iwarp" && r.State == "LISTEN" && r.PID == server.Process.Pid)
		}
		if !ok {
			t.Errorf("ports --port 7403 does not name rping's siw listener: %+v", holders)
		}
	})
	t.Run("roce is no conflict", func(t *testing.T) {
		server := startRping(t, "-s", "-a", addr, "-p", "7420", "-C", "1")
		waitListening(t, "7420")
		ln, err := net.Listen("tcp", addr+":7420")
		if err != nil {
			t.Fatalf("a TCP listener on rxe0's rdma_cm port: %v, want it to work (RoCE is not the host's port space)", err)
		}
		defer ln.Close()
		out, stderr, err := runStatus(*rdmatraceBin, "ports", "--conflicts", "-j")
		if err != nil {
			t.Fatalf("ports --conflicts: %v\n%s", err, stderr)
		}
		keep(t, "ports/conflicts.json", out)
		// A record of ports --conflicts -j: the port, whether the kernel
		// refuses one side, and both claimants' keys.
		var cs []struct {
			Port       uint16  `json:"port"`
			Conflict   *bool   `json:"conflict"`
			RDMAPID    *uint32 `json:"rdma-pid"`
			HostPID    *uint32 `json:"host-pid"`
			RDMAIfname string  `json:"rdma-ifname"`
		}
		if err := json.Unmarshal(out, &cs); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range cs {
			if c.Port == 7420 {
				found = true
				if c.Conflict == nil || *c.Conflict || text(c.RDMAPID) != fmt.Sprint(server.Process.Pid) || text(c.HostPID) != fmt.Sprint(os.Getpid()) || c.RDMAIfname != "rxe0" {
					t.Errorf("conflict record %s: want no conflict, rping on rxe0 and the test as the two holders", mustJSON(c))
				}
			}
		}
		if !found {
			t.Errorf("ports --conflicts does not list port 7420: %s", out)
		}
		// Filters pick conflicts by either side: rping's pid finds the
		// pair whose other holder is the test.
		out, stderr, err = runStatus(*rdmatraceBin, "ports", "--conflicts", "--pid", fmt.Sprint(server.Process.Pid), "-j")
		if err != nil {
			t.Fatalf("ports --conflicts --pid: %v\n%s", err, stderr)
		}
		cs = nil // decoded afresh: not into the rows above
		if err := json.Unmarshal(out, &cs); err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Port != 7420 || text(cs[0].HostPID) != fmt.Sprint(os.Getpid()) {
			t.Errorf("ports --conflicts --pid %d: %s, want the one pair on 7420 with the test as the host holder", server.Process.Pid, out)
		}
	})
}

// TestTraceNamesPortConflicts: the two orders of TestPortConflictsOnIWarp
// while tracing, with the BTF programs and with the kprobe fallback. Each
// EADDRINUSE is one port-busy event: rping's rdma_listen naming the test's
// TCP listener as the holder, and the test's bind naming rping's iWARP
// listener. siw's own failed kernel bind is not a second event.
func TestTraceNamesPortConflicts(t *testing.T) {
	needSiw(t)
	for i, mode := range []string{"btf", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			var args []string
			if mode == "fallback" {
				args = append(args, "--fallback", "-v") // -v: the hook list says which variant attached
			}
			tcpFirst, cmFirst := 7410+10*i, 7413+10*i
			tr := startTrace(t, args...)
			ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", siwAddr, tcpFirst))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			failing := exec.Command("rping", "-s", "-a", siwAddr, "-p", fmt.Sprint(tcpFirst), "-C", "1")
			if out, err := failing.CombinedOutput(); err == nil || !strings.Contains(string(out), "Address already in use") {
				t.Fatalf("rping -s on the TCP listener's port: %v\n%s", err, out)
			}
			server := startRping(t, "-s", "-a", siwAddr, "-p", fmt.Sprint(cmFirst), "-C", "1")
			waitListening(t, fmt.Sprint(cmFirst))
			if err := bindErr(siwAddr, cmFirst); !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("TCP listen on rping's siw port: %v, want EADDRINUSE", err)
			}
			time.Sleep(time.Second)
			evs := tr.stop()
			if mode == "fallback" && !strings.Contains(tr.stderr.String(), "rdma_listen (kprobe+kretprobe") {
				t.Errorf("--fallback did not use kprobes for rdma_listen:\n%s", tr.stderr.String())
			}
			var busy []traced
			for _, e := range evs {
				if e.Kind == rdma.EvPortBusy {
					busy = append(busy, e)
				}
			}
			want := []struct {
				fn, addr string
				pid      int
				holder   string
			}{
				{"rdma_listen", fmt.Sprintf("%s:%d", siwAddr, tcpFirst), failing.Process.Pid,
					fmt.Sprintf("e2e.test[%d] tcp LISTEN %s:%d", os.Getpid(), siwAddr, tcpFirst)},
				{"bind", fmt.Sprintf("%s:%d", siwAddr, cmFirst), os.Getpid(),
					fmt.Sprintf("rping[%d] iwarp LISTEN %s:%d", server.Process.Pid, siwAddr, cmFirst)},
			}
			for _, w := range want {
				n := 0
				for _, e := range busy {
					if e.PortBusy.Op != w.fn || !e.Given(rdma.HasSrcAddr) || e.Src.String() != w.addr {
						continue
					}
					n++
					holders := fmt.Sprint(e.PortBusy.Holders)
					if e.process() != fmt.Sprint(w.pid) || e.Status != -98 || !strings.Contains(holders, w.holder) {
						t.Errorf("port-busy %v: want pid %d, status -98, holders with %q", e, w.pid, w.holder)
					}
					if w.fn == "rdma_listen" && (e.DevName != "siw0" || !e.Has(rdma.EvHasRes) || e.Type != rdma.ResCMID) {
						t.Errorf("rdma_listen's port-busy %v: want the cm_id on siw0", e)
					}
				}
				if n != 1 {
					t.Errorf("%d port-busy events of %s on %s, want 1; all: %v", n, w.fn, w.addr, busy)
				}
			}
			if len(busy) != len(want) {
				t.Errorf("%d port-busy events, want %d: %v", len(busy), len(want), busy)
			}
		})
	}
}

// TestLeaksNamesThePortItsProgramCouldNotHave: `leaks -- rping -s` on a
// port the test's TCP listener holds on siw0. rping's rdma_listen gets
// EADDRINUSE and rping exits; the report says so, with the test as the
// holder, and the exit status stays rping's (a busy port is no leak).
func TestLeaksNamesThePortItsProgramCouldNotHave(t *testing.T) {
	needSiw(t)
	needModuleBTF(t) // rdma_listen's hook reads the cm_id through module BTF
	ln, err := net.Listen("tcp", siwAddr+":7430")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fs, code, stdout, stderr := leaksOut(t, nil, true, "--", "rping", "-s", "-a", siwAddr, "-p", "7430", "-C", "1")
	if code == 0 || code == 3 {
		t.Errorf("exit status %d, want rping's own failure (not 0, not 3)\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	holder := fmt.Sprintf("[%d] tcp LISTEN %s:7430", os.Getpid(), siwAddr)
	n := 0
	fs, _, _ = noLeaks(t, fs) // a busy port is no leak
	for _, f := range fs {
		if f.Report != "port-busy" {
			t.Errorf("a finding other than port-busy: %v", f)
			continue
		}
		n++
		hs := f.Holders
		if f.Func != "rdma_listen" || f.Comm != "rping" || f.Ifname != "siw0" || len(hs) != 1 || !strings.HasSuffix(hs[0], holder) {
			t.Errorf("port-busy finding %v: want rping's rdma_listen on siw0, held by the test (%s)", f, holder)
		}
	}
	if n != 1 {
		t.Errorf("%d port-busy findings, want 1: %v\nstderr: %s", n, fs, stderr)
	}
	// The human report, kept for docs/ports.md.
	report := filepath.Join(t.TempDir(), "report.txt")
	_ = exec.Command(*rdmatraceBin, "leaks", "--report", report, "--", "rping", "-s", "-a", siwAddr, "-p", "7430", "-C", "1").Run()
	text, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(text), "port busy: rping[") {
		t.Errorf("leaks' human report (%v): %q, want a port busy line", err, text)
	}
	keep(t, "leaks/port-busy.txt", text)
}
