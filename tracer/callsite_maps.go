package tracer

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/host/symbolize"
)

// mapping is one file-backed executable mapping of a process
// (/proc/PID/maps): [start, end) maps the file from off.
type mapping struct {
	start, end, off uint64
	dev             string
	ino             uint64
	path            string
	// bin is the file as read, once a frame needed it (tracer/callsite.go).
	bin    *symbolize.Binary
	binErr error
}

// maxMappings bounds what is kept of one process's maps.
const maxMappings = 4096

// parseMaps reads /proc/PID/maps's format, keeping the executable
// mappings of files. A line that does not parse is an error naming it;
// the lines before it stand.
func parseMaps(r io.Reader, name string) ([]mapping, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	var out []mapping
	// Sorted however it returns: findMapping searches what an error
	// leaves as well (the kernel lists in order, a saved file may not).
	defer func() { sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start }) }()
	for n := 1; sc.Scan(); n++ {
		m, exec, err := parseMapsLine(sc.Text())
		if err != nil {
			return out, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if exec && len(out) < maxMappings {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// parseMapsLine parses "start-end perms offset dev inode [path]"; exec
// says whether it is an executable mapping of a file.
func parseMapsLine(l string) (mapping, bool, error) {
	var m mapping
	f := strings.Fields(l)
	if len(f) < 5 {
		return m, false, fmt.Errorf("expected start-end perms offset dev inode [path], found %q", clip(l))
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	var err1, err2, err3, err4 error
	m.start, err1 = strconv.ParseUint(lo, 16, 64)
	m.end, err2 = strconv.ParseUint(hi, 16, 64)
	m.off, err3 = strconv.ParseUint(f[2], 16, 64)
	m.ino, err4 = strconv.ParseUint(f[4], 10, 64)
	if !ok || err1 != nil || err2 != nil || err3 != nil || err4 != nil || m.end <= m.start || len(f[1]) != 4 {
		return m, false, fmt.Errorf("expected start-end perms offset dev inode [path], found %q", clip(l))
	}
	m.dev = f[3]
	if len(f) >= 6 {
		// The path is the rest of the line: it may hold spaces.
		i := strings.Index(l, f[5])
		m.path = l[i:]
	}
	exec := f[1][2] == 'x' && m.ino != 0 && strings.HasPrefix(m.path, "/")
	return m, exec, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// find is the mapping holding addr, nil when none does.
func findMapping(ms []mapping, addr uint64) *mapping {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].start > addr }) - 1
	if i >= 0 && addr < ms[i].end {
		return &ms[i]
	}
	return nil
}
