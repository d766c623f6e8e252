package health

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/gid"
)

// Bounds on what is read.
const (
	maxDevices  = 1024
	maxPorts    = 256
	maxCgroups  = 1 << 14 // directories of the cgroup tree visited
	maxSysfsLen = 4096
)

// Host is where the node's state is read: Root the file system root
// ("/" on a host, a directory of the same layout in tests); Cgroup where
// the cgroup v2 hierarchy is mounted (its path under Root; "" for
// sys/fs/cgroup, "-" when there is none); Addrs the addresses of a netdev
// of our network namespace.
type Host struct {
	Root   string
	Cgroup string
	Addrs  func(netdev string) ([]netip.Addr, error)
}

// LocalHost reads this machine, its cgroup v2 hierarchy where mountinfo
// says (/sys/fs/cgroup/unified in the hybrid layout).
func LocalHost() Host {
	h := Host{Root: "/", Cgroup: "-", Addrs: InterfaceAddrs}
	if m, err := cgroup.Mount(); err == nil {
		h.Cgroup = m
	}
	return h
}

// InterfaceAddrs lists a netdev's addresses (our network namespace).
func InterfaceAddrs(netdev string) ([]netip.Addr, error) {
	ifc, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// Gather reads the node's state, except the window: the ports, the GID
// tables and the netdevs' addresses, the rdma cgroup limits.
func (h Host) Gather(dev string) *State {
	s := &State{Addrs: map[string][]netip.Addr{}}
	s.Ports, s.PortsErr = h.ReadPorts(dev)
	s.GIDs, s.GIDsErr = gid.Source{Root: h.Root, NetNS: gid.OurNetNS()}.Read(gid.Filter{Dev: dev})
	if s.GIDsErr != nil && len(s.Ports) == 0 {
		s.GIDsErr = nil // no port: said once, by the ports' check
	}
	for _, p := range s.Ports {
		if p.Netdev == "" || h.Addrs == nil {
			continue
		}
		if _, done := s.Addrs[p.Netdev]; done {
			continue
		}
		if as, err := h.Addrs(p.Netdev); err == nil {
			s.Addrs[p.Netdev] = as
		}
	}
	s.Cgroups, s.CgroupsSkip, s.CgroupsErr = h.ReadCgroups()
	return s
}

// ReadPorts reads every port of sys/class/infiniband (of dev only, when
// given): state, physical state, rate, link layer, and the netdev of
// its GID 0.
func (h Host) ReadPorts(dev string) ([]Port, error) {
	class := filepath.Join(h.Root, "sys/class/infiniband")
	devs, err := readDir(class, maxDevices)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no RDMA device at all
	}
	if err != nil {
		return nil, err
	}
	var out []Port
	var errs []error
	for _, d := range devs {
		if dev != "" && d != dev {
			continue
		}
		ports, err := readDir(filepath.Join(class, d, "ports"), maxPorts)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		for _, pn := range ports {
			n, err := strconv.ParseUint(pn, 10, 32)
			if err != nil {
				continue
			}
			dir := filepath.Join(class, d, "ports", pn)
			p := Port{Dev: d, Port: uint32(n)}
			st, err := readSysfs(filepath.Join(dir, "state"))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", d, pn, err))
				continue
			}
			p.State = afterColon(st)
			if ps, err := readSysfs(filepath.Join(dir, "phys_state")); err == nil {
				p.PhysState = afterColon(ps)
			}
			if r, err := readSysfs(filepath.Join(dir, "rate")); err == nil {
				p.Rate, p.Gbps = r, ParseRate(r)
			}
			p.LinkLayer, _ = readSysfs(filepath.Join(dir, "link_layer"))
			p.Netdev, _ = readSysfs(filepath.Join(dir, "gid_attrs/ndevs/0"))
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dev != out[j].Dev {
			return out[i].Dev < out[j].Dev
		}
		return out[i].Port < out[j].Port
	})
	return out, errors.Join(errs...)
}

// ParseRate reads sysfs's rate ("100 Gb/sec (4X EDR)", "2.5 Gb/sec
// (1X SDR)") as Gb/s; 0 when it is not one.
func ParseRate(s string) float64 {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "Gb/sec" {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) { // ParseFloat takes "NaN" and "Inf"
		return 0
	}
	return v
}

// afterColon is "ACTIVE" of "4: ACTIVE".
func afterColon(s string) string {
	if _, after, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(after)
	}
	return s
}

// ReadCgroups lists the limited resources of every cgroup of the
// unified hierarchy that has an rdma.max (the controller enabled for it),
// with its rdma.current; skip says why there is nothing to read here.
func (h Host) ReadCgroups() (limits []CgroupLimit, skip string, err error) {
	const none = "no cgroup v2 hierarchy mounted"
	mount := h.Cgroup
	switch mount {
	case "-":
		return nil, none, nil
	case "":
		mount = "/sys/fs/cgroup"
	}
	root := filepath.Join(h.Root, mount)
	ctl, err := readSysfs(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return nil, none + " (" + mount + " has no cgroup.controllers)", nil
	}
	if !slices.Contains(strings.Fields(ctl), "rdma") {
		return nil, "cgroup v2 has no rdma controller (CONFIG_CGROUP_RDMA): nothing limits RDMA objects", nil
	}
	var out []CgroupLimit
	visited := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return fs.SkipDir // a cgroup gone or unreadable: the others
		}
		if !d.IsDir() {
			return nil
		}
		if visited++; visited > maxCgroups {
			return fmt.Errorf("more than %d cgroups: the rest were not read", maxCgroups)
		}
		max, err := readStat(filepath.Join(p, "rdma.max"))
		if err != nil {
			return nil
		}
		cur, _ := readStat(filepath.Join(p, "rdma.current"))
		rel, _ := filepath.Rel(root, p)
		for dev, res := range max {
			for r, m := range res {
				if m < 0 {
					continue
				}
				out = append(out, CgroupLimit{Path: path.Clean("/" + filepath.ToSlash(rel)), Dev: dev, Resource: r, Max: m, Current: cur[dev][r]})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Dev != b.Dev {
			return a.Dev < b.Dev
		}
		return a.Resource < b.Resource
	})
	return out, "", err
}

func readStat(file string) (cgroup.RDMAStat, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return cgroup.ParseRDMAStat(f)
}

func readDir(dir string, max int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(max)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func readSysfs(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, maxSysfsLen)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return "", err
	}
	return strings.TrimSpace(string(b[:n])), nil
}

// qpsInErr counts the QPs in ERR of a netlink dump, by device.
func qpsInErr(qps []rdma.Resource) map[string]int {
	m := map[string]int{}
	for _, q := range qps {
		if _, ok := m[q.DevName]; !ok {
			m[q.DevName] = 0
		}
		if q.Given(rdma.HasState) && q.QPState == rdma.QPStateErr {
			m[q.DevName]++
		}
	}
	return m
}
