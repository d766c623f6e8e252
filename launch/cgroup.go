package launch

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is the cgroup v2 the program runs in: made for it, removed after.
type Cgroup struct {
	Path string // in the cgroup2 mount, e.g. /sys/fs/cgroup/user.slice/.../rdmatrace-leaks-4242
	// ID is the cgroup's id: what bpf_get_current_cgroup_id gives and
	// the tracer records as the owner's cgroup of each event.
	ID uint64
	fd *os.File
}

// Places to look for the cgroup2 mount: read from mountinfo, so that
// tests can point elsewhere.
var (
	mountinfoPath = "/proc/self/mountinfo"
	selfCgroup    = "/proc/self/cgroup"
)

// NewCgroup makes a cgroup for the program below rdmatrace's own cgroup
// v2 (so the program keeps the limits it would have had), or else below
// the hierarchy's root.
func NewCgroup() (*Cgroup, error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	name := "rdmatrace-leaks-" + strconv.Itoa(os.Getpid())
	var errs []error
	for _, parent := range parents(mnt) {
		c, err := create(filepath.Join(parent, name))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// parents lists where the cgroup may go: rdmatrace's own cgroup, then the root.
func parents(mnt string) []string {
	out := []string{}
	if b, err := os.ReadFile(selfCgroup); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok && rest != "/" && !strings.Contains(rest, "..") {
				out = append(out, filepath.Join(mnt, rest))
			}
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
	id, err := cgroupID(path)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &Cgroup{Path: path, ID: id, fd: f}, nil
}

// cgroupID is the kernfs id of a cgroup directory: the 8-byte handle of
// name_to_handle_at (as systemd and bpftool read it), or else its inode
// number, the same on 64-bit kernels.
func cgroupID(path string) (uint64, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err == nil && h.Size() == 8 {
		return binary.LittleEndian.Uint64(h.Bytes()), nil
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted (e.g.
// /sys/fs/cgroup, or /sys/fs/cgroup/unified in the hybrid layout).
func cgroup2Mount() (string, error) {
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		f := strings.Fields(sc.Text())
		for i, s := range f {
			if s == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 && f[3] == "/" {
				return unescapeMount(f[4]), nil
			}
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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

// Remove removes the cgroup. Processes the program left running (a
// daemon it started) are moved to the parent cgroup first, where they
// would have been without rdmatrace; their number is returned.
func (c *Cgroup) Remove() (moved int, err error) {
	defer c.fd.Close()
	parent := filepath.Join(filepath.Dir(c.Path), "cgroup.procs")
	// A process that has just exited leaves the cgroup populated for a
	// moment: try for a second.
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, pid := range c.Procs() {
			if os.WriteFile(parent, []byte(strconv.Itoa(pid)), 0) == nil {
				moved++
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
