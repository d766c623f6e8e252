//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

var workloads = flag.String("workloads", "out", "where our own C workloads (guest/workloads) are built")

// lines collects a program's output lines as they come.
type lines struct {
	mu      sync.Mutex
	partial bytes.Buffer
	all     []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial.Write(p)
	for {
		i := bytes.IndexByte(l.partial.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		l.all = append(l.all, string(l.partial.Next(i + 1)[:i]))
	}
}

// findings returns the JSON objects among the lines so far.
func (l *lines) findings(t *testing.T) []finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []finding
	for _, s := range l.all {
		if !strings.HasPrefix(s, "{") {
			continue // the traced program's own output
		}
		out = append(out, readFinding(t, "leaks -j", s))
	}
	return out
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// leakRun is `rdmatrace leaks -j` running in the background.
type leakRun struct {
	cmd         *exec.Cmd
	out, stderr lines
}

func startLeaks(t *testing.T, args ...string) *leakRun {
	t.Helper()
	needModuleBTF(t)
	ready := filepath.Join(t.TempDir(), "ready")
	l := &leakRun{}
	l.cmd = exec.Command(*rdmatraceBin, append([]string{"leaks", "-j", "--ready-file", ready}, args...)...)
	l.cmd.Stdout, l.cmd.Stderr = &l.out, &l.stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l.cmd.ProcessState == nil {
			_ = l.cmd.Process.Kill()
			_ = l.cmd.Wait()
		}
	})
	waitFor(t, 60*time.Second, "rdmatrace leaks to attach", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	return l
}

// noLeaks splits off the "no-leaks" record that ends a clean `leaks --
// CMD`, and reads its counts: created and destroyed, -1 without one.
func noLeaks(t *testing.T, fs []finding) (rest []finding, created, destroyed int) {
	t.Helper()
	created, destroyed = -1, -1
	for _, f := range fs {
		if f.Report != "no-leaks" {
			rest = append(rest, f)
			continue
		}
		var c struct{ Created, Destroyed *int }
		if err := json.Unmarshal([]byte(f.line), &c); err != nil || c.Created == nil || c.Destroyed == nil {
			t.Fatalf("no-leaks record %s: want created and destroyed (%v)", f.line, err)
		}
		created, destroyed = *c.Created, *c.Destroyed
	}
	return rest, created, destroyed
}

// belongsTo tells whether a finding's owner is process pid (its "pid" is
// the creating thread, "tgid" its process when they differ).
func belongsTo(f finding, pid int) bool {
	p := fmt.Sprint(pid)
	return text(f.PID) == p || text(f.TGID) == p
}

// TestLeaksNamesWhatHoldsAnUnregister stops a connected rping pair, starts
// `rdma link delete rxe0` (which blocks in ib_uverbs_remove_one while the
// processes hold the device), and checks that within 10 s rdmatrace names
// both processes with their QP, CQ, MR, PD and CM_ID as what the
// unregistration waits for; after SIGKILL, that it finished.
func TestLeaksNamesWhatHoldsAnUnregister(t *testing.T) {
	needDevice(t)
	t.Cleanup(func() { // the next tests need rxe0 again
		if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", *rdmaUp, err, out)
		}
	})
	// Blocked past 1 s, the rpings held it: a leak (exit status 3).
	l := startLeaks(t, "--interval", "2s", "--max-blocked", "1s", "--filter-dev", device)
	w := &workload{t: t}
	t.Cleanup(w.stop)
	ports += 10
	port := fmt.Sprint(ports)
	server := w.start("rping", "-s", "-a", addr, "-p", port, "-C", "100000000")
	time.Sleep(time.Second)
	client := w.start("rping", "-c", "-a", addr, "-p", port, "-C", "100000000")
	waitFor(t, 60*time.Second, "the rping pair to connect", func() bool {
		n := 0
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.Owner.PID != 0 && r.QPState == rdma.QPStateRTS {
				n++
			}
		}
		return n >= 2
	})
	w.signal(syscall.SIGSTOP)

	del := exec.Command("rdma", "link", "delete", device)
	var delOut bytes.Buffer
	del.Stdout, del.Stderr = &delOut, &delOut
	began := time.Now()
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	want := []string{"qp", "cq", "mr", "pd", "cm_id"}
	named := func(fs []finding, pid int) (missing []string, waiting bool) {
		have := map[string]bool{}
		for _, f := range fs {
			if !belongsTo(f, pid) {
				continue
			}
			switch f.Report {
			case "unregister":
				if f.Ifname == device {
					have[f.Res] = true
				}
			case "waiting":
				waiting = f.Ifname == device
			}
		}
		for _, r := range want {
			if !have[r] {
				missing = append(missing, r)
			}
		}
		return missing, waiting
	}
	deadline := began.Add(10 * time.Second)
	for {
		fs := l.out.findings(t)
		ms, ws := named(fs, server.Process.Pid)
		mc, wc := named(fs, client.Process.Pid)
		if len(ms) == 0 && len(mc) == 0 && ws && wc {
			t.Logf("both rpings named as what the unregistration waits for after %v", time.Since(began).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after rdma link delete: server %d misses %v (waiting line %v), client %d misses %v (waiting line %v)\n%s\n%s",
				server.Process.Pid, ms, ws, client.Process.Pid, mc, wc, l.out.String(), l.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if del.ProcessState != nil {
		t.Errorf("rdma link delete did not block while the rpings held rxe0: %s", delOut.String())
	}

	w.stop() // SIGKILL: the kernel's exit cleanup frees everything
	done := make(chan error, 1)
	go func() { done <- del.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rdma link delete: %v\n%s", err, delOut.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatal("rdma link delete still blocked 90 s after the rpings were killed")
	}
	waitFor(t, 10*time.Second, "the unregistered report", func() bool {
		for _, f := range l.out.findings(t) {
			if f.Report == "unregistered" && f.Ifname == device {
				if text(f.Left) != "0" || text(f.FreedAtExit) == "0" {
					t.Errorf("unregistered report: %v, want nothing left and frees at exit", f)
				}
				return true
			}
		}
		return false
	})
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	err := l.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("rdmatrace leaks after reporting leaks: %v, want exit status 3\n%s", err, l.stderr.String())
	}
}

// leakModule is the path of rdmatrace_leak.ko built for the running
// kernel by guest/kmod.sh; the test skips, saying why, where it could not
// be built.
func leakModule(t *testing.T) string {
	t.Helper()
	ko := filepath.Join(*kmodDir, release(t), "rdmatrace_leak.ko")
	if _, err := os.Stat(ko); err != nil {
		if why, err := os.ReadFile(filepath.Join(filepath.Dir(ko), "unbuildable")); err == nil {
			t.Skipf("no leak module for kernel %s: %s", release(t), strings.TrimSpace(string(why)))
		}
		t.Fatalf("%v: build it with guest/kmod.sh (make e2e does)", err)
	}
	return ko
}

// TestLeaksNamesAKernelListenerThatHoldsAnUnregister loads rdmatrace_leak
// as an rdma_cm listener bound to rxe0's address that ignores the device's
// removal (listen=): `rdma link delete rxe0` then blocks in rdma_cm's
// cma_remove_one, which waits for every kernel user's cm_id on the device,
// with nothing a process holds. leaks must say so every --interval, naming
// the module and its one cm_id; once the module is removed (its exit
// destroys the listener), the unregistration finishes with nothing left,
// and leaks exits 3: the listener held it past --max-blocked.
func TestLeaksNamesAKernelListenerThatHoldsAnUnregister(t *testing.T) {
	needDevice(t)
	ko := leakModule(t)
	const module = "rdmatrace_leak"
	t.Cleanup(func() {
		_, _, _ = runStatus("rmmod", module)
		if out, err := exec.Command(*rdmaUp).CombinedOutput(); err != nil { // the next tests need rxe0 again
			t.Errorf("%s: %v\n%s", *rdmaUp, err, out)
		}
	})
	const maxBlocked = 2 * time.Second
	l := startLeaks(t, "--interval", "1s", "--max-blocked", maxBlocked.String(), "--filter-dev", device)
	run(t, "insmod", ko, "listen="+addr)
	var listener string
	var cmids []resObject
	if err := json.Unmarshal(run(t, "rdma", "-j", "res", "show", "cm_id"), &cmids); err != nil {
		t.Fatal(err)
	}
	for _, o := range cmids {
		if o.Comm == module && o.PID == nil && o.Ifname == device && o.CMIDN != nil {
			listener = ident("cm_id", device, *o.CMIDN, "["+module+"]")
		}
	}
	if listener == "" {
		t.Fatalf("rdma res shows no cm_id of [%s] on %s after insmod listen=%s:\n%s", module, device, addr, run(t, "rdma", "res", "show", "cm_id"))
	}

	del := exec.Command("rdma", "link", "delete", device)
	var delOut lines
	del.Stdout, del.Stderr = &delOut, &delOut
	began := time.Now()
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	delDone := make(chan error, 1)
	go func() { delDone <- del.Wait() }()
	// Waiting lines past --max-blocked, each naming the module and the one
	// cm_id it holds; and the listener among what was alive at the start.
	type waiting struct {
		Blocked   float64 `json:"blocked"`
		Resources int     `json:"resources"`
		HeldCMID  int     `json:"held-cm_id"`
	}
	var last waiting
	var alive bool
	waitFor(t, 30*time.Second, "a waiting line past --max-blocked naming ["+module+"]", func() bool {
		for _, f := range l.out.findings(t) {
			switch {
			case f.Report == "unregister" && findingIdent(t, f) == listener:
				alive = true
			case f.Report == "waiting":
				if f.Ifname != device || f.Comm != module || f.PID != nil { // a kernel owner: comm without pid
					t.Fatalf("a waiting line for something other than the listener: %v", f)
				}
				var w waiting
				if err := json.Unmarshal([]byte(f.line), &w); err != nil {
					t.Fatalf("waiting line %v: %v", f, err)
				}
				if w.Resources != 1 || w.HeldCMID != 1 {
					t.Fatalf("waiting line %v: want 1 resource, 1 cm_id", f)
				}
				last = w
			}
		}
		return alive && last.Blocked > maxBlocked.Seconds()
	})
	t.Logf("blocked %gs, waiting for [%s]'s cm_id, %v after rdma link delete", last.Blocked, module, time.Since(began).Round(time.Millisecond))
	select {
	case err := <-delDone:
		t.Fatalf("rdma link delete returned while the listener held %s: %v\n%s", device, err, delOut.String())
	default:
	}

	run(t, "rmmod", module) // its exit destroys the listener
	select {
	case err := <-delDone:
		if err != nil {
			t.Fatalf("rdma link delete: %v\n%s", err, delOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rdma link delete still blocked 60 s after rmmod %s; tasks in uninterruptible sleep:\n%s", module, stuckTasks())
	}
	waitFor(t, 10*time.Second, "the unregistered report", func() bool {
		for _, f := range l.out.findings(t) {
			if f.Report == "unregistered" && f.Ifname == device {
				if text(f.Left) != "0" {
					t.Errorf("unregistered report: %v, want nothing left", f)
				}
				return true
			}
		}
		return false
	})
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	err := l.cmd.Wait()
	keep(t, "leaks/kernel-listener.ndjson", []byte(l.out.String()+"\n"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("rdmatrace leaks after a listener held %s past --max-blocked: %v, want exit status 3\n%s", device, err, l.stderr.String())
	}
	if out := run(t, "rdma", "res", "show", "cm_id"); strings.Contains(string(out), module) {
		t.Errorf("rdma res still shows a cm_id of %s after rmmod:\n%s", module, out)
	}
}

// TestLeaksWatchOfACleanRemovalExitsZero: rdmatrace_leak with leak=0
// holds a PD, a CQ and a QP on rxe1 and frees them in its remove
// callback, and an rping listens on every address (its ID is on no
// device; rdma_cm makes a child of it on each device). `rdma link delete
// rxe1` finishes with nothing left; at Ctrl-C the listener is alive and
// listed so. A device watch exits 3 only for a removal that leaked or was
// held past --max-blocked: here 0 (it exited 3 before: what was alive at
// the end and created during the run counted as leaked). The watch's
// exit 3 after a leak is TestLeaksNamesWhatAKernelModuleLeft's.
func TestLeaksWatchOfACleanRemovalExitsZero(t *testing.T) {
	needDevice(t)
	ko := leakModule(t)
	const dev, module = "rxe1", "rdmatrace_leak"
	l := startLeaks(t)
	w := &workload{t: t}
	t.Cleanup(w.stop)
	ports += 10
	port := fmt.Sprint(ports)
	w.start("rping", "-s", "-a", "0.0.0.0", "-p", port)
	run(t, "rdma", "link", "add", dev, "type", "rxe", "netdev", "veth1")
	t.Cleanup(func() { _, _, _ = runStatus("rdma", "link", "delete", dev) })
	run(t, "insmod", ko, "dev="+dev, "leak=0")
	t.Cleanup(func() { _, _, _ = runStatus("rmmod", module) })
	waitListening(t, port)
	waitFor(t, 30*time.Second, "the module's QP in rdma res", func() bool {
		for _, r := range snapshot(t, rdma.ResQP) {
			if r.DevName == dev && r.Owner.KernName == module {
				return true
			}
		}
		return false
	})
	run(t, "rdma", "link", "delete", dev)
	waitFor(t, 30*time.Second, "the unregistered report of "+dev, func() bool {
		for _, f := range l.out.findings(t) {
			if f.Report == "unregistered" && f.Ifname == dev {
				if text(f.Left) != "0" {
					t.Errorf("unregistered: %v, want nothing left (the module frees its objects)", f)
				}
				return true
			}
		}
		return false
	})
	run(t, "rmmod", module)
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	err := l.cmd.Wait()
	alive := false
	for _, f := range l.out.findings(t) {
		switch {
		case f.Report == "end" && f.Comm == "rping" && f.Res == "cm_id":
			alive = true
		case f.Report == "left" || f.Report == "exit-cleanup":
			t.Errorf("a leak reported: %v", f)
		}
	}
	if !alive {
		t.Errorf("rping's listener is not listed as alive at the end:\n%s", l.out.String())
	}
	if err != nil {
		t.Errorf("rdmatrace leaks after a clean removal, rping listening: %v, want exit status 0\n%s", err, l.stderr.String())
	}
}

// runLeaks runs `rdmatrace leaks -j -- CMD...` to the end.
// Its log is stderr and the program's own output.
func runLeaks(t *testing.T, argv ...string) (fs []finding, code int, log string) {
	t.Helper()
	needModuleBTF(t)
	fs, code, stdout, stderr := leaksOut(t, nil, false, append([]string{"--"}, argv...)...)
	return fs, code, stderr + "\nstdout:\n" + stdout
}

// TestLeaksOfAProgram: a program that exits without destroying its QP is
// reported (QP, CQ and PD, freed by the kernel at its exit) with exit
// status 3; the same program destroying them, and a clean rping run, are
// not, and leaks passes their exit status on.
func TestLeaksOfAProgram(t *testing.T) {
	needDevice(t)
	leakqp := filepath.Join(*workloads, "leakqp")
	fs, code, log := runLeaks(t, leakqp, device)
	if code != 3 {
		t.Errorf("leaks -- leakqp: exit status %d, want 3\n%s", code, log)
	}
	var lqpn string
	for _, s := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(s, "lqpn "); ok {
			lqpn = v
		}
	}
	got := map[string]bool{}
	for _, f := range fs {
		if f.Report != "exit-cleanup" || f.Comm != "leakqp" || f.Cleanup != "exit" || f.Ifname != device {
			t.Errorf("unexpected finding %v", f)
			continue
		}
		got[f.Res] = true
		if f.Res == "qp" && text(f.LQPN) != lqpn {
			t.Errorf("leaked QP lqpn %v, leakqp printed %s", text(f.LQPN), lqpn)
		}
	}
	for _, r := range []string{"qp", "cq", "pd"} {
		if !got[r] {
			t.Errorf("leakqp's %s is not reported\n%s", r, log)
		}
	}

	fs, code, log = runLeaks(t, leakqp, device, "clean")
	fs, made, destroyed := noLeaks(t, fs)
	// Its context, PD, CQ and QP at least, each destroyed.
	if code != 0 || len(fs) != 0 || made < 4 || destroyed != made {
		t.Errorf("leaks -- leakqp clean: status %d, findings %v, %d created, %d destroyed; want 0, none and \"no leaks\" with as many destroyed as created\n%s",
			code, fs, made, destroyed, log)
	}
	fs, code, _ = runLeaks(t, "sh", "-c", "exit 7")
	if fs, made, destroyed := noLeaks(t, fs); code != 7 || len(fs) != 0 || made != 0 || destroyed != 0 {
		t.Errorf("leaks -- sh -c 'exit 7': status %d, findings %v, %d created, %d destroyed; want 7, none and no leaks of 0", code, fs, made, destroyed)
	}

	ports += 10
	port := fmt.Sprint(ports)
	w := &workload{t: t}
	t.Cleanup(w.stop)
	w.start("rping", "-s", "-a", addr, "-p", port, "-C", "3")
	time.Sleep(time.Second)
	fs, code, log = runLeaks(t, "rping", "-c", "-a", addr, "-p", port, "-C", "3")
	if fs, made, destroyed := noLeaks(t, fs); code != 0 || len(fs) != 0 || made == 0 || destroyed != made {
		t.Errorf("leaks -- rping (a clean run): status %d, findings %v, %d created, %d destroyed; want 0, none and no leaks\n%s", code, fs, made, destroyed, log)
	}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "events:") && !strings.Contains(sc.Text(), " 0 dropped") {
			t.Errorf("events were dropped: %s", sc.Text())
		}
	}
}
