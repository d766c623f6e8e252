//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leaksOut runs `rdmatrace leaks -j ARGS...`; with output, the findings go
// to --report FILE and stdout is only the program's (without, the tests
// also run against rdmatrace binaries from before --report).
func leaksOut(t *testing.T, env []string, output bool, args ...string) (fs []finding, code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	for _, kv := range env {
		if uid, ok := strings.CutPrefix(kv, "SUDO_UID="); ok {
			// Under sudo the report is made as that user: in a directory
			// the user may write.
			n, _ := strconv.Atoi(uid)
			dir = userDir(t, n)
		}
	}
	report := filepath.Join(dir, "report.ndjson")
	flags := []string{"leaks", "-j"}
	if output {
		flags = append(flags, "--report", report)
	}
	cmd := exec.Command(*rdmatraceBin, append(flags, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut lines
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("rdmatrace leaks %v: %v", args, err)
	}
	if !output {
		return out.findings(t), code, out.String(), errOut.String()
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		fs = append(fs, readFinding(t, "the report file of leaks -j", sc.Text()))
	}
	return fs, code, out.String(), errOut.String()
}

// TestLeaksOfAChildThatExitsAtOnce: the program is a shell whose child,
// leakqp, creates a PD, a CQ and a QP and exits at once. rdmatrace used to
// read the child's ancestry from /proc when it handled the event, after the
// child was gone, and reported nothing with exit status 0 (issue 10, D5).
// The owner's cgroup, read by the BPF programs at the event, decides now.
func TestLeaksOfAChildThatExitsAtOnce(t *testing.T) {
	needDevice(t)
	needModuleBTF(t) // the owner's cgroup comes from the BPF programs
	for _, mode := range []string{"", "--fallback"} {
		t.Run("mode "+mode, func(t *testing.T) { childThatExitsAtOnce(t, mode) })
	}
}

func childThatExitsAtOnce(t *testing.T, mode string) {
	leakqp := filepath.Join(*workloads, "leakqp")
	args := []string{"--", "sh", "-c", leakqp + " " + device + "; true"}
	if mode != "" {
		args = append([]string{mode}, args...)
	}
	fs, code, stdout, stderr := leaksOut(t, nil, false, args...)
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "kprobe") && !strings.Contains(line, "hooks attached") {
			t.Log(line) // what the kernel says about missed kprobes
		}
	}
	log := stderr + "\nstdout:\n" + stdout
	if code != 3 {
		t.Errorf("leaks -- sh -c 'leakqp; true': exit status %d, want 3\n%s", code, log)
	}
	got := map[string]bool{}
	cgroups := map[string]bool{}
	for _, f := range fs {
		if f.Report != "exit-cleanup" || f.Comm != "leakqp" {
			t.Errorf("unexpected finding %v", f)
			continue
		}
		got[f.Res] = true
		cgroups[text(f.CgroupID)] = true
	}
	for _, r := range []string{"qp", "cq", "pd"} {
		if !got[r] {
			t.Errorf("the child's %s is not reported\n%s", r, log)
		}
	}
	if len(cgroups) != 1 || cgroups["<nil>"] || cgroups["0"] {
		t.Errorf("findings' cgroup-id: %v, want one id, not 0", cgroups)
	}
}

// TestLeaksIgnoresAReusedPID: the program's child (an rping server) lives
// long enough to be known by its PID, and is killed; an unrelated rping
// server then gets the same PID (through ns_last_pid) and keeps its
// listening CM_ID past the program's end. It used to be reported as the
// program's leak (issue 10, D5); its cgroup says it is not.
func TestLeaksIgnoresAReusedPID(t *testing.T) {
	needDevice(t)
	needModuleBTF(t)
	ports += 10
	port1, port2 := fmt.Sprint(ports), fmt.Sprint(ports+1)
	pidFile := filepath.Join(t.TempDir(), "child")
	script := fmt.Sprintf("rping -s -a %s -p %s & echo $! >%s.tmp; mv %s.tmp %s; sleep 1; kill -KILL $!; wait; sleep 4",
		addr, port1, pidFile, pidFile, pidFile)
	type result struct {
		fs             []finding
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		defer close(done) // also when leaksOut fails the test
		var r result
		r.fs, r.code, r.stdout, r.stderr = leaksOut(t, nil, false, "--", "sh", "-c", script)
		done <- r
	}()
	var child int
	waitFor(t, 60*time.Second, "the program's rping", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		child, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	waitFor(t, 10*time.Second, "the program's rping to be killed", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", child))
		return err != nil
	})
	w := &workload{t: t}
	t.Cleanup(w.stop)
	var stranger *exec.Cmd
	for try := 0; try < 20 && (stranger == nil || stranger.Process.Pid != child); try++ {
		if stranger != nil {
			w.stop()
			w = &workload{t: t}
		}
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(child-1)), 0); err != nil {
			t.Skipf("cannot choose the next PID: %v", err)
		}
		stranger = w.start("rping", "-s", "-a", addr, "-p", port2)
	}
	if stranger.Process.Pid != child {
		t.Skipf("the stranger got PID %d, not the program's old %d", stranger.Process.Pid, child)
	}
	waitListening(t, port2)
	r, ok := <-done
	if !ok {
		t.FailNow()
	}
	log := r.stderr + "\nstdout:\n" + r.stdout
	for _, f := range r.fs {
		if f.Report != "exit-cleanup" || text(f.PID) != strconv.Itoa(child) {
			t.Errorf("finding %v: want only exit cleanups of the program's rping %d\n%s", f, child, log)
		}
	}
	if len(r.fs) == 0 {
		t.Errorf("the program's killed rping left nothing to report\n%s", log)
	}
	t.Logf("PID %d: the program's rping, killed, then an unrelated rping; %d findings", child, len(r.fs))
}

// TestLeaksRunsTheProgramAsTheSudoUser: under sudo (SUDO_UID/SUDO_GID),
// the program runs as that user, not as root (issue 10, D6); --duration
// stops a program that would run on (SIGTERM: status 143).
func TestLeaksRunsTheProgramAsTheSudoUser(t *testing.T) {
	needDevice(t)    // leaks needs the RDMA modules to attach
	needModuleBTF(t) // and their BTF: without it, it refuses to start
	fs, code, stdout, stderr := leaksOut(t, []string{"SUDO_UID=65534", "SUDO_GID=65533"}, true, "--", "sh", "-c", "id -u; id -g")
	if got := strings.Fields(stdout); len(got) != 2 || got[0] != "65534" || got[1] != "65533" {
		t.Errorf("the program says uid/gid %q, want 65534 65533\n%s", got, stderr)
	}
	if fs, _, _ := noLeaks(t, fs); code != 0 || len(fs) != 0 {
		t.Errorf("status %d, findings %v; want 0 and none\n%s", code, fs, stderr)
	}

	// --report: the report in the file, the program's output alone on stdout.
	leakqp := filepath.Join(*workloads, "leakqp")
	fs, code, stdout, stderr = leaksOut(t, nil, true, "--", leakqp, device)
	if code != 3 || len(fs) == 0 {
		t.Errorf("leaks --report F -- leakqp: status %d, %d findings in F; want 3 and some\n%s", code, len(fs), stderr)
	}
	if !strings.HasPrefix(stdout, "lqpn ") || strings.Contains(stdout, "{") {
		t.Errorf("stdout should hold leakqp's output only: %q", stdout)
	}
	began := time.Now()
	_, code, _, stderr = leaksOut(t, nil, true, "--duration", "2s", "--", "sleep", "100")
	if took := time.Since(began); code != 143 || took > 30*time.Second {
		t.Errorf("leaks --duration 2s -- sleep 100: status %d after %v, want 143 soon after 2 s\n%s", code, took, stderr)
	}
}

// userDir is a directory of uid's that uid may reach: t.TempDir's parent
// is root's alone.
func userDir(t *testing.T, uid int) string {
	t.Helper()
	top, err := os.MkdirTemp("", "e2e-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	dir := filepath.Join(top, "d")
	for _, err := range []error{os.Chmod(top, 0o755), os.Mkdir(dir, 0o755), os.Chown(dir, uid, uid)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
