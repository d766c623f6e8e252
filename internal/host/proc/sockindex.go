package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// SocketIndex finds the process that holds a socket, by the socket's
// inode, from a scan of every process's open files that it keeps between
// lookups: what it has seen is answered at once, and only an inode it has
// not seen makes it read /proc again, at most once per MinRescan. An inode
// that a scan found no process holding (a kernel socket, as iWARP's are)
// is not looked for again until Forget has passed. A scan reads a link per
// open file on the machine (tens of milliseconds per thousand files,
// seconds with a user's hundred thousand): SocketOwners, which scans at
// each call, suits a one-off listing; the index suits a tracer that names
// the holders of many events. It is safe for use by several goroutines.
type SocketIndex struct {
	Root      string        // "/proc" when empty
	MinRescan time.Duration // 0: a second
	Forget    time.Duration // 0: ten seconds
	Max       int           // sockets kept at most (0: 1<<18); past it a scan keeps only those asked for

	mu      sync.Mutex
	owners  map[uint64]uint32    // inode -> lowest pid holding it, as of the last scan
	missing map[uint64]time.Time // inodes a scan found no process holding, and when
	scanned time.Time            // the last scan's start
	scans   int
	now     func() time.Time
}

// SocketOwners finds the processes holding the sockets with these inodes
// open: inode -> the lowest such pid, as CommCache.SocketOwners does, from
// the index, scanning again only as the type says.
func (x *SocketIndex) SocketOwners(inodes map[uint64]bool) map[uint64]uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.clock()
	out := map[uint64]uint32{}
	unknown := false
	for ino := range inodes {
		if pid, ok := x.owners[ino]; ok {
			out[ino] = pid
		} else if at, ok := x.missing[ino]; !ok || now.Sub(at) >= x.forget() {
			unknown = true
		}
	}
	if !unknown || (x.scans > 0 && now.Sub(x.scanned) < x.minRescan()) {
		return out
	}
	x.scan(now, inodes)
	clear(out)
	for ino := range inodes {
		if pid, ok := x.owners[ino]; ok {
			out[ino] = pid
		} else {
			x.missing[ino] = now
		}
	}
	return out
}

// Scans is how many times the index has read every process's files.
func (x *SocketIndex) Scans() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.scans
}

// scan reads every process's open files anew; wanted are kept past Max.
func (x *SocketIndex) scan(now time.Time, wanted map[uint64]bool) {
	x.scans++
	x.scanned = now
	owners := map[uint64]uint32{}
	limit := x.Max
	if limit <= 0 {
		limit = 1 << 18
	}
	eachSocket(x.root(), func(ino uint64, pid uint32) {
		old, seen := owners[ino]
		if !seen && len(owners) >= limit && !wanted[ino] {
			return
		}
		if !seen || pid < old {
			owners[ino] = pid
		}
	})
	x.owners = owners
	if x.missing == nil || len(x.missing) > limit {
		x.missing = map[uint64]time.Time{}
	}
	for ino, at := range x.missing {
		if now.Sub(at) >= x.forget() {
			delete(x.missing, ino)
		}
	}
}

func (x *SocketIndex) root() string {
	if x.Root == "" {
		return "/proc"
	}
	return x.Root
}

func (x *SocketIndex) clock() time.Time {
	if x.now != nil {
		return x.now()
	}
	return time.Now()
}

func (x *SocketIndex) minRescan() time.Duration {
	if x.MinRescan > 0 {
		return x.MinRescan
	}
	return time.Second
}

func (x *SocketIndex) forget() time.Duration {
	if x.Forget > 0 {
		return x.Forget
	}
	return 10 * time.Second
}

// eachSocket calls f with every socket a process holds open under root
// (a /proc/PID/fd link "socket:[INODE]") and the process's pid.
func eachSocket(root string, f func(ino uint64, pid uint32)) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := socketInode(target); ok {
				f(ino, uint32(pid))
			}
		}
	}
}
