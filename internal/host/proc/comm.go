// Package proc reads process facts from /proc: names, thread groups,
// parents, open files and sockets. It keeps no answer of its own beyond
// CommCache's names; internal/host/enrich is what names owners with it.
package proc

import (
	"os"
	"strconv"
	"strings"
)

// CommCache looks up process names from /proc/PID/comm, once per PID. The
// kernel reports only a PID for user objects; like iproute2, we name it.
type CommCache struct {
	Root  string // "/proc" when empty
	names map[uint32]string
}

// Comm returns the name of pid (a process or thread id), or "" when it has
// exited or is not visible.
func (c *CommCache) Comm(pid uint32) string {
	if pid == 0 {
		return ""
	}
	if name, ok := c.names[pid]; ok {
		return name
	}
	root := c.Root
	if root == "" {
		root = "/proc"
	}
	b, err := os.ReadFile(root + "/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	name := ""
	if err == nil {
		name = strings.TrimSuffix(string(b), "\n")
	}
	if c.names == nil {
		c.names = make(map[uint32]string)
	}
	c.names[pid] = name
	return name
}

// Len is how many pids c has names for.
func (c *CommCache) Len() int { return len(c.names) }
