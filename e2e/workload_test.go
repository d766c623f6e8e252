//go:build e2e

package e2e

import (
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

	"github.com/rdmatrace/rdmatrace/nldev"
	"github.com/rdmatrace/rdmatrace/rdma"
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
}

func (w *workload) start(name string, args ...string) *exec.Cmd {
	w.t.Helper()
	cmd := exec.Command(name, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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

// startAll starts an rping pair, an ib_write_lat -R pair, an
// ibv_rc_pingpong pair and an ibv_srq_pingpong pair (an SRQ with 4 QPs on
// each side), and waits until all 14 RC QPs are in RTS.
func startAll(t *testing.T) *workload {
	w := &workload{t: t}
	t.Cleanup(w.stop) // also when waiting below fails
	gid := gidIndex(t)
	ports += 10
	rp, lat, rc, srq := fmt.Sprint(ports), fmt.Sprint(ports+1), fmt.Sprint(ports+2), fmt.Sprint(ports+3)
	w.start("rping", "-s", "-a", addr, "-p", rp, "-C", "10000000")
	w.start("ib_write_lat", "-d", device, "-R", "-p", lat, "-n", "100000000")
	w.start("ibv_rc_pingpong", "-d", device, "-g", gid, "-p", rc, "-n", "100000000")
	w.start("ibv_srq_pingpong", "-d", device, "-g", gid, "-p", srq, "-q", "4", "-n", "100000000")
	// Clients that come before their server listens fail or, worse, are
	// rejected and leave half-made QPs behind (perftest does): wait. And a
	// second more, as before: a run once hung when the clients came at once.
	waitListening(t, rp, lat, rc, srq)
	time.Sleep(time.Second)
	w.start("rping", "-c", "-a", addr, "-p", rp, "-C", "10000000")
	w.start("ib_write_lat", "-d", device, "-R", "-p", lat, "-n", "100000000", addr)
	w.start("ibv_rc_pingpong", "-d", device, "-g", gid, "-p", rc, "-n", "100000000", addr)
	w.start("ibv_srq_pingpong", "-d", device, "-g", gid, "-p", srq, "-q", "4", "-n", "100000000", addr)
	t.Cleanup(func() {
		if t.Failed() { // what the programs had made
			out, _, _ := runStatus("sh", "-c", "rdma res show qp; rdma res show cm_id; ss -tan")
			t.Logf("at the end:\n%s", out)
		}
	})
	waitFor(t, 90*time.Second, "14 RC QPs in RTS", func() bool {
		n := 0
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.QPType == rdma.QPTypeRC && r.QPState == rdma.QPStateRTS {
				n++
			}
		}
		return n >= 14
	})
	return w
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
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			b, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(b), "\n") {
				fs := strings.Fields(line)
				if len(fs) > 3 && fs[3] == "0A" { // TCP_LISTEN
					if i := strings.LastIndexByte(fs[1], ':'); i >= 0 {
						if p, err := strconv.ParseUint(fs[1][i+1:], 16, 16); err == nil {
							listening[fmt.Sprint(p)] = true
						}
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

func snapshot(t *testing.T, typ rdma.ResType) []rdma.Resource {
	t.Helper()
	c, err := nldev.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.Resources(typ, devs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
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
