package lifecycle

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// startDaemonizing starts a program in its own cgroup that starts a
// child and prints its pid; it returns the program and the child's pid.
func startDaemonizing(t *testing.T) (*launch.Program, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root (CI runs as root)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := launch.Start(launch.Options{Argv: []string{"sh", "-c", "sleep 100 & echo $!; exec sleep 100"}, Stdout: w, Stderr: os.Stderr})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := r.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || p.Cgroup == nil {
		p.Kill()
		p.Wait()
		t.Skipf("no child pid (%q) or no cgroup (%v)", buf[:n], p.CgroupErr)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/comm"); string(comm) == "sleep\n" {
			break // the child runs sleep, not the shell it forked from
		}
	}
	return p, child
}

// A second stop signal exits at once, but the program's cgroup does not
// stay behind, nor what runs in it.
func TestExitingAtOnceKillsAndRemovesTheProgramsCgroup(t *testing.T) {
	p, child := startDaemonizing(t)
	abandonProgram(p, os.Stderr)
	p.Wait()
	if _, err := os.Stat(p.Cgroup.Path); !os.IsNotExist(err) {
		t.Errorf("the program's cgroup is still there: %v", err)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat"); err == nil && !strings.Contains(string(b), ") Z") {
		t.Errorf("the program's child %d still runs: %s", child, b)
	}
}

// What a program leaves running is named, comm[pid].
func TestLeftoversAreNamed(t *testing.T) {
	p, child := startDaemonizing(t)
	defer func() { p.Kill(); p.Wait(); p.Cleanup() }()
	if got, want := processNames([]int{child}), "sleep["+strconv.Itoa(child)+"]"; got != want {
		t.Errorf("processNames = %q, want %q", got, want)
	}
	if got := processNames([]int{child, child, child, child, child, child, child}); !strings.HasSuffix(got, ", and 2 more") {
		t.Errorf("seven processes named %q, want five and \"and 2 more\"", got)
	}
}
