// Package cgroup maps cgroup v2 ids, as BPF records them
// (bpf_get_current_cgroup_id, a task's dfl_cgrp kernfs id), to paths in
// the hierarchy, and finds where the hierarchy is mounted.
package cgroup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MountinfoPath is read by Mount; tests point it elsewhere.
var MountinfoPath = "/proc/self/mountinfo"

// Mount finds where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup, or
// /sys/fs/cgroup/unified in the hybrid layout.
func Mount() (string, error) {
	f, err := os.Open(MountinfoPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return mountIn(f)
}

// mountIn finds the cgroup v2 mount point in the text of a mountinfo file.
func mountIn(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER,
		// separated by single spaces (show_mountinfo): a path keeps any
		// other blank (a carriage return, a vertical tab, U+00A0) that
		// strings.Fields would split at.
		f := strings.Split(sc.Text(), " ")
		for i, s := range f {
			if s == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 && f[3] == "/" {
				return unescapeMount(f[4]), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read mountinfo for the cgroup v2 mount: %w", err)
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

// ID is the kernfs id of a cgroup directory: the 8-byte handle of
// name_to_handle_at (as systemd and bpftool read it), or else its inode
// number, the same on 64-bit kernels.
func ID(dir string) (uint64, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, dir, 0)
	if err == nil && h.Size() == 8 {
		return binary.LittleEndian.Uint64(h.Bytes()), nil
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Resolver names cgroup ids. It walks the hierarchy once, and again when
// asked for an id it has not seen, at most once per MinRescan: events name
// cgroups made after the walk, and a flood of unknown ids must not turn
// into a flood of walks. A cgroup removed since keeps its last known path:
// the owner of a leaked resource has often gone by the time it is named.
type Resolver struct {
	Root      string        // the cgroup2 mount
	MinRescan time.Duration // between two walks

	mu       sync.Mutex
	paths    map[uint64]string
	lastWalk time.Time
	walks    int
}

// NewResolver resolves ids under the mount root.
func NewResolver(root string) *Resolver {
	return &Resolver{Root: root, MinRescan: time.Second, paths: map[uint64]string{}}
}

// Path returns the cgroup's path relative to the mount, "/" for the root,
// e.g. /system.slice/docker-<id>.scope; false if the id is not known.
func (r *Resolver) Path(id uint64) (string, bool) {
	if id == 0 {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.paths[id]; ok {
		return p, true
	}
	if r.walks > 0 && time.Since(r.lastWalk) < r.MinRescan {
		return "", false
	}
	r.walk()
	p, ok := r.paths[id]
	return p, ok
}

// Rescan walks the hierarchy now and returns every cgroup it knows, by
// id (a removed one keeps its last path).
func (r *Resolver) Rescan() map[uint64]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.walk()
	out := make(map[uint64]string, len(r.paths))
	for id, p := range r.paths {
		out[id] = p
	}
	return out
}

// Walks is how often the hierarchy was walked (for tests and -v).
func (r *Resolver) Walks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.walks
}

func (r *Resolver) walk() {
	r.walks++
	r.lastWalk = time.Now()
	filepath.WalkDir(r.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // a cgroup removed under the walk, or a control file
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		rel, err := filepath.Rel(r.Root, path)
		if err != nil {
			return nil
		}
		r.paths[st.Ino] = clean(rel)
		return nil
	})
}

func clean(rel string) string {
	if rel == "." {
		return "/"
	}
	return "/" + filepath.ToSlash(rel)
}
