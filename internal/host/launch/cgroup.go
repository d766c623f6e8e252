package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
)

// Cgroup is the cgroup v2 the program runs in: made for it, removed after.
type Cgroup struct {
	Path string // in the cgroup2 mount, e.g. /sys/fs/cgroup/user.slice/.../rdmatrace-leaks-4242
	// ID is the cgroup's id: what bpf_get_current_cgroup_id gives and
	// the tracer records as the owner's cgroup of each event.
	ID uint64
	// Reaped are the cgroups of earlier runs that were gone when this
	// one was made, removed (see reap).
	Reaped []string
	fd     *os.File
}

// cgroupPrefix begins the name of every cgroup made for a program; the
// making rdmatrace's PID ends it.
const cgroupPrefix = "rdmatrace-leaks-"

// selfCgroup names rdmatrace's own cgroup; tests point it elsewhere.
var selfCgroup = "/proc/self/cgroup"

// NewCgroup makes a cgroup for the program below rdmatrace's own cgroup
// v2 (so the program keeps the limits it would have had), or else below
// the hierarchy's root.
func NewCgroup() (*Cgroup, error) {
	mnt, err := cgroup.Mount()
	if err != nil {
		return nil, err
	}
	name := cgroupPrefix + strconv.Itoa(os.Getpid())
	var errs []error
	var reaped []string
	for _, parent := range parents(mnt) {
		reaped = append(reaped, reap(parent, running)...)
		c, err := create(filepath.Join(parent, name))
		if err == nil {
			c.Reaped = reaped
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// reap removes the cgroups in parent that a killed rdmatrace left: an
// rdmatrace removes its program's cgroup when the program has exited,
// but one killed with SIGKILL removes nothing (its program dies with it,
// by its parent death signal). A cgroup is removed only when it is ours
// (cgroupPrefix and a PID), the rdmatrace of that PID no longer runs,
// and it is empty (rmdir refuses a cgroup with a process or a cgroup in
// it, so what a program left running keeps its place). It returns the
// cgroups removed.
func reap(parent string, running func(pid int) bool) []string {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(rest)
		// Our own PID's is an earlier process's too, not made yet by us:
		// left there, it would keep us from making ours.
		if err != nil || pid <= 0 || strconv.Itoa(pid) != rest || pid != os.Getpid() && running(pid) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if unix.Rmdir(path) == nil {
			out = append(out, path)
		}
	}
	return out
}

// running says whether process pid exists (another user's too).
func running(pid int) bool {
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// parents lists where the cgroup may go: rdmatrace's own cgroup, then the root.
func parents(mnt string) []string {
	b, _ := os.ReadFile(selfCgroup)
	return parentsIn(b, mnt)
}

// parentsIn is parents from the text of /proc/self/cgroup: the cgroup v2
// line's path below mnt, never above it, then mnt.
func parentsIn(selfCgroup []byte, mnt string) []string {
	out := []string{}
	for _, line := range strings.Split(string(selfCgroup), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok && rest != "/" && !strings.Contains(rest, "..") {
			out = append(out, filepath.Join(mnt, rest))
		}
	}
	return append(out, mnt)
}

func create(path string) (*Cgroup, error) {
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	id, err := cgroup.ID(path)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &Cgroup{Path: path, ID: id, fd: f}, nil
}

// FD is the open cgroup directory, for SysProcAttr.CgroupFD.
func (c *Cgroup) FD() int { return int(c.fd.Fd()) }

// Procs lists the processes in the cgroup now.
func (c *Cgroup) Procs() []int {
	b, err := os.ReadFile(filepath.Join(c.Path, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, s := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(s); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// killFile is the cgroup's kill switch (Linux 5.14); tests point it
// elsewhere to take the fallback.
var killFile = "cgroup.kill"

// Kill sends SIGKILL to every process in the cgroup, those it is forking
// included: by cgroup.kill where the kernel has it (5.14), else by
// killing each process in cgroup.procs until every one listed has been
// (for a second at most; the error says how many are left). It does not
// wait for them to exit: Empty does.
func (c *Cgroup) Kill() error {
	if err := os.WriteFile(filepath.Join(c.Path, killFile), []byte("1"), 0); err == nil {
		return nil
	}
	killed := map[int]bool{}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		fresh := false
		for _, pid := range c.Procs() {
			// A killed process stays listed until it has exited: kill
			// each once. One that forks after it was killed makes no
			// child (copy_process gives up on a fatal signal pending).
			if !killed[pid] {
				killed[pid] = true
				fresh = true
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if !fresh {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill the processes of cgroup %s: %d still there after a second", c.Path, len(c.Procs()))
		}
	}
}

// Signal sends sig to every process in the cgroup now but except.
func (c *Cgroup) Signal(sig unix.Signal, except int) {
	for _, pid := range c.Procs() {
		if pid != except {
			_ = unix.Kill(pid, sig)
		}
	}
}

// Empty waits until no process is left in the cgroup, or until deadline;
// it says whether none is.
func (c *Cgroup) Empty(deadline time.Time) bool {
	for {
		if len(c.Procs()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Remove removes the cgroup. Processes the program left running (a
// daemon it started) are moved to the parent cgroup first, where they
// would have been without rdmatrace; their pids are returned.
func (c *Cgroup) Remove() (moved []int, err error) {
	defer c.fd.Close()
	parent := filepath.Join(filepath.Dir(c.Path), "cgroup.procs")
	// A process that has just exited leaves the cgroup populated for a
	// moment: try for a second.
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, pid := range c.Procs() {
			if os.WriteFile(parent, []byte(strconv.Itoa(pid)), 0) == nil {
				moved = append(moved, pid)
			}
		}
		err = unix.Rmdir(c.Path)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return moved, nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return moved, fmt.Errorf("remove cgroup %s: %w", c.Path, err)
		}
	}
}
