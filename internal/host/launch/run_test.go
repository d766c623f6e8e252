package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making cgroups and changing users needs root (CI runs as root)")
	}
}

// output runs a program with Start and returns its stdout.
func output(t *testing.T, opts Options) (string, *Program) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	opts.Stdout, opts.Stderr = w, os.Stderr
	p, err := Start(opts)
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r)
	r.Close()
	if err := p.Wait(); err != nil {
		t.Errorf("%v: %v", opts.Argv, err)
	}
	return buf.String(), p
}

// TestProgramStartsInItsOwnCgroup: the program, and a child it starts
// that exits at once, are in the new cgroup from their first instruction;
// the cgroup's id is its directory's; it is gone afterwards.
func TestProgramStartsInItsOwnCgroup(t *testing.T) {
	needRoot(t)
	out, p := output(t, Options{Argv: []string{"sh", "-c", "cat /proc/self/cgroup; (cat /proc/self/cgroup)"}})
	if p.Cgroup == nil {
		t.Skipf("no cgroup v2 here: %v", p.CgroupErr)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p.Cgroup.Path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ino != p.Cgroup.ID {
		t.Errorf("cgroup id %d, its directory's inode %d", p.Cgroup.ID, st.Ino)
	}
	name := filepath.Base(p.Cgroup.Path)
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "0::") {
			n++
			if !strings.HasSuffix(line, "/"+name) {
				t.Errorf("a process of the program is in %s, want .../%s", line, name)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d cgroup v2 lines, want 2 (the program and its child):\n%s", n, out)
	}
	if left, err := p.Cleanup(); err != nil || len(left) != 0 {
		t.Errorf("Cleanup: %v left, %v", left, err)
	}
	if _, err := os.Stat(p.Cgroup.Path); !os.IsNotExist(err) {
		t.Errorf("the cgroup is still there: %v", err)
	}
}

// TestProgramRunsAsTheChosenUser: nobody's uid, gid and groups, and HOME.
func TestProgramRunsAsTheChosenUser(t *testing.T) {
	needRoot(t)
	id := &Identity{UID: 65534, GID: 65534, Groups: []uint32{65534}, Name: "nobody", Home: "/nonexistent", Why: "test"}
	out, p := output(t, Options{Argv: []string{"sh", "-c", `echo $(id -u) $(id -g) $(id -G) $HOME`}, User: id})
	p.Cleanup()
	if got := strings.TrimSpace(out); got != "65534 65534 65534 /nonexistent" {
		t.Errorf("the program says %q, want 65534 65534 65534 /nonexistent", got)
	}
}

// TestStopKillsAProgramThatIgnoresSIGTERM: Stop sends SIGTERM and, after
// the grace, SIGKILL; the exit code tells which ended it.
func TestStopKillsAProgramThatIgnoresSIGTERM(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
	}{
		{"exec sleep 100", 128 + int(syscall.SIGTERM)},
		{"trap '' TERM; exec sleep 100", 128 + int(syscall.SIGKILL)},
	} {
		p, err := Start(Options{Argv: []string{"sh", "-c", c.script}, NoCgroup: true})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let sh set its trap
		began := time.Now()
		p.Stop(300 * time.Millisecond)
		err = p.Wait()
		if got := ExitCode(err); got != c.code {
			t.Errorf("%s: exit code %d after %v, want %d", c.script, got, time.Since(began), c.code)
		}
	}
}

// TestCleanupMovesWhatTheProgramLeftRunning: a daemon started by the
// program goes back to the parent cgroup and the cgroup is removed.
func TestCleanupMovesWhatTheProgramLeftRunning(t *testing.T) {
	needRoot(t)
	out, p := output(t, Options{Argv: []string{"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"}})
	if p.Cgroup == nil {
		t.Skipf("no cgroup v2 here: %v", p.CgroupErr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid %q: %v", out, err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	left, err := p.Cleanup()
	if err != nil || len(left) != 1 || left[0] != pid {
		t.Errorf("Cleanup: %v left, %v; want [%d]", left, err, pid)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if strings.Contains(string(b), filepath.Base(p.Cgroup.Path)) {
		t.Errorf("the daemon is still in the program's cgroup: %s", b)
	}
}

// TestProgramGetsTheOriginalMemlockLimit: what the tracer raised is put
// back before the program starts.
func TestProgramGetsTheOriginalMemlockLimit(t *testing.T) {
	needRoot(t)
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &orig); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &orig)
	if orig != origMemlock {
		t.Skipf("RLIMIT_MEMLOCK changed since the test started: %+v, %+v", orig, origMemlock)
	}
	// cilium/ebpf's rlimit.RemoveMemlock sets it to infinity on kernels
	// before 5.11; without CAP_SYS_RESOURCE here, any other value will do.
	other := unix.Rlimit{Cur: orig.Max, Max: orig.Max}
	if orig.Cur == orig.Max {
		other.Cur = orig.Cur / 2
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &other); err != nil {
		t.Fatal(err)
	}
	out, p := output(t, Options{Argv: []string{"sh", "-c", "ulimit -l"}, NoCgroup: true})
	p.Cleanup()
	want := "unlimited"
	if orig.Cur != unix.RLIM_INFINITY {
		want = strconv.FormatUint(orig.Cur/1024, 10)
	}
	if got := strings.TrimSpace(out); got != want {
		t.Errorf("the program's ulimit -l is %s, want %s (the limit before the tracer raised it)", got, want)
	}
}

// TestForwardPassesSignalsOn: SIGINT and SIGTERM that rdmatrace gets reach
// the program (here there is no terminal that gave it SIGINT already).
func TestForwardPassesSignalsOn(t *testing.T) {
	if foreground() {
		t.Skip("run from a terminal: its SIGINT went to the program already, and is not forwarded")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Start(Options{Argv: []string{"sh", "-c", "trap 'exit 5' INT TERM; echo ready; while :; do sleep 0.05; done"}, NoCgroup: true, Stdout: w})
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := r.Read(buf); err != nil { // the trap is set
			t.Fatal(err)
		}
		p.Forward(sig)
		if code := ExitCode(p.Wait()); code != 5 {
			t.Errorf("%v: the program's exit code is %d, want 5 (its trap ran)", sig, code)
		}
		r.Close()
	}
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// startWithChild starts script, which prints the pid of a child it
// started, and returns the program and that pid.
func startWithChild(t *testing.T, script string) (*Program, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := Start(Options{Argv: []string{"sh", "-c", script}, Stdout: w, Stderr: os.Stderr})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if p.Cgroup == nil {
		p.Kill()
		p.Wait()
		t.Skipf("no cgroup v2 here: %v", p.CgroupErr)
	}
	buf := make([]byte, 32)
	n, _ := r.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		p.Kill()
		p.Wait()
		t.Fatalf("child pid %q: %v", buf[:n], err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return p, pid
}

// TestStopEndsEveryProcessOfTheCgroup: SIGTERM reaches the program's
// children too, not only the program, and the program's exit waits for
// theirs.
func TestStopEndsEveryProcessOfTheCgroup(t *testing.T) {
	needRoot(t)
	p, child := startWithChild(t, "sleep 100 & echo $!; wait")
	began := time.Now()
	p.Stop(20 * time.Second)
	code := ExitCode(p.Wait())
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Stop took %v: the SIGTERM did not reach every process", took)
	}
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	if alive(child) {
		t.Errorf("the program's child %d still runs after Stop", child)
	}
	if left, err := p.Cleanup(); err != nil || len(left) != 0 {
		t.Errorf("Cleanup: %v left, %v; want none", left, err)
	}
}

// TestStopKillsTheCgroupAfterTheGrace: a child that ignores SIGTERM
// (and outlives the program) is killed when the grace is over, by
// cgroup.kill or, without it, by killing each process in cgroup.procs.
func TestStopKillsTheCgroupAfterTheGrace(t *testing.T) {
	needRoot(t)
	for _, kill := range []string{"cgroup.kill", "no-such-file"} {
		t.Run(kill, func(t *testing.T) {
			defer func(f string) { killFile = f }(killFile)
			killFile = kill
			p, child := startWithChild(t, "(trap '' TERM; exec sleep 100) & echo $!; exec sleep 100")
			time.Sleep(100 * time.Millisecond) // let the child set its trap
			began := time.Now()
			p.Stop(300 * time.Millisecond)
			p.Wait()
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("Stop took %v", took)
			}
			if alive(child) {
				t.Errorf("the program's child %d, which ignores SIGTERM, still runs after Stop", child)
			}
			if left, err := p.Cleanup(); err != nil || len(left) != 0 {
				t.Errorf("Cleanup: %v left, %v; want none", left, err)
			}
		})
	}
}

// TestKillKillsAForkingCgroup: without cgroup.kill, processes that fork
// while they are killed are all killed.
func TestKillKillsAForkingCgroup(t *testing.T) {
	needRoot(t)
	defer func(f string) { killFile = f }(killFile)
	killFile = "no-such-file"
	p, _ := startWithChild(t, "echo $$; while :; do sleep 100 & done")
	time.Sleep(200 * time.Millisecond)
	if err := p.Cgroup.Kill(); err != nil {
		t.Error(err)
	}
	p.Wait()
	if !p.Cgroup.Empty(time.Now().Add(3 * time.Second)) {
		t.Errorf("processes left after Kill: %v", p.Cgroup.Procs())
	}
	p.Cleanup()
}
