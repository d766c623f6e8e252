package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// deadPID is the PID of a process that has exited (and been waited for).
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// A SIGKILLed rdmatrace leaves its program's cgroup; the next one removes
// it: only a cgroup of ours (the prefix and a PID), whose rdmatrace no
// longer runs, and that is empty.
func TestReapRemovesOnlyEmptyCgroupsOfRunsThatAreGone(t *testing.T) {
	dir := t.TempDir()
	dead, alive := deadPID(t), os.Getppid()
	mk := func(name string, populated bool) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if populated { // a cgroup below it, or a process in it: rmdir refuses
			os.Mkdir(filepath.Join(p, "child"), 0o755)
		}
		return p
	}
	stale := mk(cgroupPrefix+strconv.Itoa(dead), false)
	mine := mk(cgroupPrefix+strconv.Itoa(os.Getpid()), false) // an earlier process's with our PID
	keep := []string{
		mk(cgroupPrefix+strconv.Itoa(alive), false),      // its rdmatrace runs
		mk(cgroupPrefix+strconv.Itoa(dead+100000), true), // what its program left runs on
		mk(cgroupPrefix+"0"+strconv.Itoa(dead), false),   // not a name we make
		mk(cgroupPrefix+"x", false),
		mk("system.slice", false),
	}
	running := func(pid int) bool { return pid == alive }
	got := reap(dir, running)
	slices.Sort(got)
	want := []string{stale, mine}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reaped %v, want %v", got, want)
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// On the cgroup v2 hierarchy: a stale cgroup of a killed run is gone once
// the next program starts, and the start says so; a populated one stays.
func TestStartReapsStaleCgroups(t *testing.T) {
	needRoot(t)
	probe, err := NewCgroup()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	parent := filepath.Dir(probe.Path)
	probe.Remove()
	stale := filepath.Join(parent, cgroupPrefix+strconv.Itoa(deadPID(t)))
	busy := filepath.Join(parent, cgroupPrefix+strconv.Itoa(deadPID(t)))
	for _, p := range []string{stale, busy} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sleeper.Process.Kill()
		sleeper.Wait()
		os.Remove(busy)
	}()
	if err := os.WriteFile(filepath.Join(busy, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	_, p := output(t, Options{Argv: []string{"true"}})
	if p.Cgroup == nil {
		t.Fatalf("no cgroup: %v", p.CgroupErr)
	}
	defer p.Cleanup()
	if !slices.Contains(p.Cgroup.Reaped, stale) || slices.Contains(p.Cgroup.Reaped, busy) {
		t.Errorf("reaped %v, want %s and not %s", p.Cgroup.Reaped, stale, busy)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", stale, err)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("the populated cgroup was removed: %v", err)
	}
	// Moved back where it was, the sleeper dies with the test.
	os.WriteFile(filepath.Join(parent, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0)
}
