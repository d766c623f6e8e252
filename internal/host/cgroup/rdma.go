package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// RDMAStat is one of the rdma controller's files (rdma.max, rdma.current)
// as numbers: device name -> resource (hca_handle, hca_object) -> value,
// -1 for "max" (no limit).
type RDMAStat map[string]map[string]int64

// maxRDMAStat bounds what is read of one file: a line a device.
const maxRDMAStat = 64 << 10

// ParseRDMAStat reads an rdma.max or rdma.current file's text: one line a
// device, "rxe0 hca_handle=2 hca_object=8" (or =max).
func ParseRDMAStat(r io.Reader) (RDMAStat, error) {
	out := RDMAStat{}
	sc := bufio.NewScanner(io.LimitReader(r, maxRDMAStat))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		res := map[string]int64{}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q: expected resource=value", n, kv)
			}
			if v == "max" {
				res[k] = -1
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || x < 0 {
				return nil, fmt.Errorf("line %d: %q: expected a count or max", n, kv)
			}
			res[k] = x
		}
		out[f[0]] = res
	}
	return out, sc.Err()
}

func readRDMAStat(file string) (RDMAStat, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseRDMAStat(f)
}

// RDMALimit is a cgroup's limit and use of one resource of one device.
type RDMALimit struct {
	Path         string // from the hierarchy's root
	Max, Current int64  // Max -1: max
}

// RDMALimitReached finds the cgroup whose rdma.max refused one more of
// resource on dev for a process in cgroup rel (a path from root): rel or
// the nearest ancestor with a limit that its use has reached, read now.
// The kernel charges each level up to the root and refuses at the first
// that would go over. When none has reached its limit now (objects freed
// since), the nearest with a limit; ok false when no level limits it.
func RDMALimitReached(root, rel, dev, resource string) (RDMALimit, bool) {
	var nearest RDMALimit
	found := false
	for p := path.Clean("/" + rel); ; p = path.Dir(p) {
		if p != "/" { // the root cgroup has no rdma.max
			dir := filepath.Join(root, filepath.FromSlash(p))
			max, err1 := readRDMAStat(filepath.Join(dir, "rdma.max"))
			cur, err2 := readRDMAStat(filepath.Join(dir, "rdma.current"))
			if err1 == nil && err2 == nil {
				if m, ok := max[dev][resource]; ok && m >= 0 {
					l := RDMALimit{Path: p, Max: m, Current: cur[dev][resource]}
					if l.Current >= l.Max {
						return l, true
					}
					if !found {
						nearest, found = l, true
					}
				}
			}
		}
		if p == "/" {
			return nearest, found
		}
	}
}
