// Package gid reads the RDMA ports' GID tables from sysfs, as show_gids
// does: each port's gids/I, gid_attrs/types/I and gid_attrs/ndevs/I under
// /sys/class/infiniband, with the netdev's VLAN from /proc/net/vlan. Empty
// entries (the zero GID) are left out. Every read is bounded; an entry
// that cannot be read or parsed is an error naming its file, and the rest
// are still read.
package gid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Limits on what is read: sysfs files of a GID table are one short line.
const (
	maxFile    = 256   // bytes read of one file
	maxDevices = 1024  // devices under the class directory
	maxPorts   = 256   // ports of one device
	maxEntries = 65536 // entries of one port's table
)

// Filter selects what is read: a device by name and a port (0: all).
type Filter struct {
	Dev  string
	Port uint32
}

// Source is where the tables are read.
type Source struct {
	// Root is the file system root the kernel's files are under: "/" on
	// a host, a directory of the same layout in tests.
	Root string
	// NetNS is our network namespace's inode: the namespace a netdev
	// seen in Root's sys/class/net is in.
	NetNS uint64
}

// Read returns every non-empty entry of the ports f selects, by device,
// port and index. An entry that could not be read is an error in the
// joined error, beside the entries that could.
func (s Source) Read(f Filter) ([]rdma.GIDEntry, error) {
	class := filepath.Join(s.Root, "sys/class/infiniband")
	devs, err := readDirNames(class, maxDevices)
	if err != nil {
		return nil, fmt.Errorf("RDMA devices: %w (is ib_core loaded? /sys/class/infiniband lists them)", err)
	}
	if f.Dev != "" {
		if !contains(devs, f.Dev) {
			return nil, fmt.Errorf("no RDMA device %q (devices: %s)", f.Dev, strings.Join(devs, ", "))
		}
		devs = []string{f.Dev}
	}
	var out []rdma.GIDEntry
	var errs []error
	for _, dev := range devs {
		portsDir := filepath.Join(class, dev, "ports")
		ports, err := readDirNames(portsDir, maxPorts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		nums := make([]uint32, 0, len(ports))
		for _, p := range ports {
			n, err := strconv.ParseUint(p, 10, 32)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: expected port numbers, found %q", portsDir, p))
				continue
			}
			nums = append(nums, uint32(n))
		}
		sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
		for _, port := range nums {
			if f.Port != 0 && port != f.Port {
				continue
			}
			es, err := s.readPort(dev, port, filepath.Join(portsDir, strconv.FormatUint(uint64(port), 10)))
			out = append(out, es...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if f.Port != 0 && len(out) == 0 && len(errs) == 0 {
		found := false
		for _, dev := range devs {
			if _, err := os.Stat(filepath.Join(class, dev, "ports", strconv.FormatUint(uint64(f.Port), 10))); err == nil {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no port %d on %s", f.Port, strings.Join(devs, ", "))
		}
	}
	return out, errors.Join(errs...)
}

func (s Source) readPort(dev string, port uint32, dir string) ([]rdma.GIDEntry, error) {
	ll, err := readFile(filepath.Join(dir, "link_layer"))
	if err != nil {
		return nil, err
	}
	eth := strings.TrimSpace(ll) == "Ethernet"
	idx, err := readDirNames(filepath.Join(dir, "gids"), maxEntries)
	if err != nil {
		return nil, err
	}
	nums := make([]uint32, 0, len(idx))
	for _, i := range idx {
		if n, err := strconv.ParseUint(i, 10, 32); err == nil {
			nums = append(nums, uint32(n))
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var out []rdma.GIDEntry
	var errs []error
	for _, i := range nums {
		name := strconv.FormatUint(uint64(i), 10)
		path := filepath.Join(dir, "gids", name)
		text, err := readFile(path)
		if err != nil {
			// A RoCE port's empty entry may refuse to be read
			// (EINVAL, ENODATA on some kernels): nothing to show.
			continue
		}
		g, err := ParseGID(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		if g == (netip.AddrFrom16([16]byte{})) {
			continue // empty, as show_gids skips it
		}
		e := rdma.GIDEntry{DevName: dev, Port: port, Index: i, GID: g, Eth: eth}
		// An entry's attributes can be gone by the time they are read
		// (the address was removed): the GID is then shown without them.
		if t, err := readFile(filepath.Join(dir, "gid_attrs/types", name)); err == nil {
			if e.Type, err = ParseType(t); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, "gid_attrs/types", name), err))
			}
		}
		if nd, err := readFile(filepath.Join(dir, "gid_attrs/ndevs", name)); err == nil {
			e.Netdev = strings.TrimSpace(nd)
			s.netdev(&e)
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// netdev fills the netdev's VLAN and namespace: a netdev seen in our
// sys/class/net is in our namespace.
func (s Source) netdev(e *rdma.GIDEntry) {
	if e.Netdev == "" || strings.ContainsAny(e.Netdev, "/\x00") || e.Netdev == "." || e.Netdev == ".." {
		return
	}
	if _, err := os.Stat(filepath.Join(s.Root, "sys/class/net", e.Netdev)); err == nil {
		e.NetNS = s.NetNS
	}
	if text, err := readFile(filepath.Join(s.Root, "proc/net/vlan", e.Netdev)); err == nil {
		if vid, ok := ParseVLAN(text); ok {
			e.HasVLAN, e.VLAN = true, vid
		}
	}
}

// ParseGID reads a GID as sysfs writes it: eight groups of four hex
// digits ("fe80:0000:0000:0000:5054:00ff:fe12:3456"), or any IPv6 text.
func ParseGID(text string) (netip.Addr, error) {
	t := strings.TrimSpace(text)
	a, err := netip.ParseAddr(t)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("expected a GID (eight groups of four hex digits), found %q", clip(t))
	}
	return a, nil
}

// ParseType reads gid_attrs/types/I: "IB/RoCE v1" (IB, or RoCE v1 on an
// Ethernet port) or "RoCE v2".
func ParseType(text string) (rdma.GIDType, error) {
	switch t := strings.TrimSpace(text); t {
	case "IB/RoCE v1", "IB", "RoCE v1":
		return rdma.GIDTypeIB, nil
	case "RoCE v2":
		return rdma.GIDTypeRoCEv2, nil
	default:
		return 0, fmt.Errorf("expected a GID type (IB/RoCE v1 or RoCE v2), found %q", clip(t))
	}
}

// ParseVLAN reads /proc/net/vlan/NDEV's "NDEV  VID: 5  REORDER_HDR: 1 ..."
// line: the VLAN id.
func ParseVLAN(text string) (uint16, bool) {
	_, rest, ok := strings.Cut(text, "VID:")
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[0], 10, 12)
	if err != nil {
		return 0, false
	}
	return uint16(v), true
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// readFile reads at most maxFile bytes of path.
func readFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(bytes.TrimRight(b, "\n")), nil
}

// readDirNames lists dir's entries, at most max of them.
func readDirNames(dir string, max int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(max + 1)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(names) > max {
		return nil, fmt.Errorf("%s: more than %d entries", dir, max)
	}
	sort.Strings(names)
	return names, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// OurNetNS is the inode of the network namespace we run in (0: unknown).
func OurNetNS() uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		return 0
	}
	return st.Ino
}

// Change is an entry that differs between two reads of the tables.
type Change struct {
	What  string // "added", "removed" or "changed" (the same index, another GID or attributes)
	Entry rdma.GIDEntry
}

// Diff is what changed from old to cur (both as Read returns them, by
// device, port and index): removals and changes first, in old's order,
// then additions in cur's.
func Diff(old, cur []rdma.GIDEntry) []Change {
	type key struct {
		dev         string
		port, index uint32
	}
	now := make(map[key]rdma.GIDEntry, len(cur))
	for _, e := range cur {
		now[key{e.DevName, e.Port, e.Index}] = e
	}
	before := make(map[key]bool, len(old))
	var out []Change
	for _, e := range old {
		k := key{e.DevName, e.Port, e.Index}
		before[k] = true
		n, ok := now[k]
		switch {
		case !ok:
			out = append(out, Change{"removed", e})
		case n != e:
			out = append(out, Change{"changed", n})
		}
	}
	for _, e := range cur {
		if !before[key{e.DevName, e.Port, e.Index}] {
			out = append(out, Change{"added", e})
		}
	}
	return out
}

// WatchOptions say how Watch polls.
type WatchOptions struct {
	Filter Filter
	Every  time.Duration // between two reads
	// Change gets each difference from the read before, at the moment it
	// was seen; its error ends the watch. Flush is called after each read's
	// changes.
	Change func(at time.Time, c Change) error
	Flush  func() error
	// Warn gets a read's error; the watch goes on (a device that went
	// away, a sysfs read that failed: the next read tries again).
	Warn func(error)
}

// Watch reads the tables every o.Every and hands over what was added,
// removed or changed since last (polled: a change between two reads is
// seen once, late by up to the interval), until ctx is done.
func (s Source) Watch(ctx context.Context, last []rdma.GIDEntry, o WatchOptions) error {
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := s.Read(o.Filter)
		if err != nil {
			o.Warn(err)
			if cur == nil {
				continue
			}
		}
		now := time.Now()
		for _, ch := range Diff(last, cur) {
			if err := o.Change(now, ch); err != nil {
				return err
			}
		}
		if err := o.Flush(); err != nil {
			return err
		}
		last = cur
	}
}
