package proc

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func (c *CommCache) root() string {
	if c.Root == "" {
		return "/proc"
	}
	return c.Root
}

// RDMAFiles lists the RDMA character devices (/dev/infiniband/...) that a
// process holds open, each once, sorted. A uverbs file is named with its
// device when sys can tell ("/dev/infiniband/uverbs0 (rxe0)"); sys is the
// sysfs root, "/sys" when empty.
func (c *CommCache) RDMAFiles(pid uint32, sys string) []string {
	if sys == "" {
		sys = "/sys"
	}
	dir := c.root() + "/" + strconv.FormatUint(uint64(pid), 10) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.HasPrefix(target, "/dev/infiniband/") || seen[target] {
			continue
		}
		seen[target] = true
		name := target
		// A device being removed has its node deleted: " (deleted)".
		if base := filepath.Base(strings.TrimSuffix(target, " (deleted)")); strings.HasPrefix(base, "uverbs") {
			if dev, err := os.ReadFile(filepath.Join(sys, "class/infiniband_verbs", base, "ibdev")); err == nil {
				name += " (" + strings.TrimSpace(string(dev)) + ")"
			}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ParentPID returns the parent of a process, or 0 when it cannot be read.
func (c *CommCache) ParentPID(pid uint32) uint32 {
	b, err := os.ReadFile(c.root() + "/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0
	}
	return statPPID(b)
}

// statPPID reads the parent's pid from the bytes of /proc/PID/stat
// ("PID (COMM) STATE PPID ..."), 0 when it cannot.
func statPPID(b []byte) uint32 {
	// The comm in parentheses may hold anything: parse after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		return 0
	}
	return uint32(ppid)
}

// TGID returns the process (thread group) of a thread, or 0 when it
// cannot be read. The kernel's RDMA netlink names the creating thread.
func (c *CommCache) TGID(tid uint32) uint32 {
	b, err := os.ReadFile(c.root() + "/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	return statusTGID(b)
}

// statusTGID reads the "Tgid:" line of the bytes of /proc/PID/status, 0
// when it cannot.
func statusTGID(b []byte) uint32 {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}

// SocketOwners finds the processes that hold the sockets with these
// inodes open (a /proc/PID/fd link "socket:[INODE]"): inode -> the lowest
// such pid. A socket no process holds (a kernel socket, as iWARP's are,
// or one in TIME-WAIT) is not in the result. It reads every process's
// files at each call: call it with the inodes that matter only, and use a
// SocketIndex to look up many times.
func (c *CommCache) SocketOwners(inodes map[uint64]bool) map[uint64]uint32 {
	out := map[uint64]uint32{}
	if len(inodes) == 0 {
		return out
	}
	eachSocket(c.root(), func(ino uint64, pid uint32) {
		if !inodes[ino] {
			return
		}
		if old, seen := out[ino]; !seen || pid < old {
			out[ino] = pid
		}
	})
	return out
}

// socketInode reads the inode of a socket from the target of its
// /proc/PID/fd link, "socket:[INODE]" (sock_d_dname).
func socketInode(target string) (uint64, bool) {
	rest, ok := strings.CutPrefix(target, "socket:[")
	rest, closed := strings.CutSuffix(rest, "]")
	if !ok || !closed {
		return 0, false
	}
	ino, err := strconv.ParseUint(rest, 10, 64)
	return ino, err == nil
}

// UID returns a process's real user id, false when it cannot be read
// (the process has gone).
func (c *CommCache) UID(pid uint32) (uint32, bool) {
	b, err := os.ReadFile(c.root() + "/" + strconv.FormatUint(uint64(pid), 10) + "/status")
	if err != nil {
		return 0, false
	}
	return statusUID(b)
}

// statusUID reads the real uid, the first field of the "Uid:" line of the
// bytes of /proc/PID/status.
func statusUID(b []byte) (uint32, bool) {
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.ParseUint(f[0], 10, 32)
			return uint32(n), err == nil
		}
	}
	return 0, false
}
