// Package netns finds network namespaces by name, path or all of them, as
// `ip netns` and lsns do (the named ones under /run/netns and every
// distinct /proc/PID/ns/net), and lists a namespace's addresses.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// NS is one network namespace.
type NS struct {
	Name  string // the name under /run/netns, or "pid N" when only a process is in it, or "self"
	Path  string // a file that opens it
	Inode uint64 // what identifies it (as in /proc/PID/ns/net's net:[INODE])
}

// Roots are where namespaces are looked for; tests point them elsewhere.
type Roots struct {
	Named string // /run/netns
	Proc  string // /proc
}

// DefaultRoots are the system's.
var DefaultRoots = Roots{Named: "/run/netns", Proc: "/proc"}

// Find resolves spec: "all", a name under r.Named, or a path.
func (r Roots) Find(spec string) ([]NS, error) {
	switch {
	case spec == "all":
		return r.All()
	case spec == "":
		return nil, errors.New("--netns needs NAME, PATH or all")
	case filepath.Base(spec) == spec:
		ns, err := open(spec, filepath.Join(r.Named, spec))
		if err != nil {
			return nil, fmt.Errorf("network namespace %q: %w (ip netns list shows the named ones)", spec, err)
		}
		return []NS{ns}, nil
	}
	ns, err := open(spec, spec)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", spec, err)
	}
	return []NS{ns}, nil
}

// All is our own namespace first, then every named one, then every other
// one a process is in; each once.
func (r Roots) All() ([]NS, error) {
	var out []NS
	seen := map[uint64]bool{}
	add := func(ns NS) {
		if !seen[ns.Inode] {
			seen[ns.Inode] = true
			out = append(out, ns)
		}
	}
	self, err := open("self", filepath.Join(r.Proc, "self", "ns", "net"))
	if err != nil {
		return nil, fmt.Errorf("our own network namespace: %w", err)
	}
	add(self)
	if ents, err := os.ReadDir(r.Named); err == nil {
		for _, e := range ents {
			if ns, err := open(e.Name(), filepath.Join(r.Named, e.Name())); err == nil {
				add(ns)
			}
		}
	}
	ents, err := os.ReadDir(r.Proc)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, pid := range pids {
		p := strconv.Itoa(pid)
		if ns, err := open("pid "+p, filepath.Join(r.Proc, p, "ns", "net")); err == nil {
			add(ns) // a process that exited under us is skipped
		}
	}
	return out, nil
}

// open stats a namespace file: the inode is the namespace's identity.
func open(name, path string) (NS, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return NS{}, err
	}
	return NS{Name: name, Path: path, Inode: st.Ino}, nil
}
