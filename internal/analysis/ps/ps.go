// Package ps groups RDMA resources by the process or kernel module that
// holds them: the rows of `rdmatrace ps`, an lsof for RDMA.
package ps

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Row is one holder of RDMA resources.
type Row struct {
	PID    uint32 // the process (thread group); 0 for a kernel module
	Comm   string // the process's name
	Module string // the kernel module, for the kernel's own users
	// Counts has one entry per type of rdma.ResourceTypes, in that order;
	// -1 for a type the kernel cannot dump (ctx and srq before Linux 5.x).
	Counts  []int
	Devices []string // sorted
	Files   []string // its open /dev/infiniband files, sorted
	// Place is where the process runs (cgroup, container, namespaces);
	// nil when unknown.
	Place *rdma.Placement
}

// Procs names a process (enrich.Enricher does): its name, the process of
// a thread, its open files and where it runs.
type Procs interface {
	Comm(pid uint32) string
	TGID(tid uint32) uint32
	RDMAFiles(pid uint32, sys string) []string
	Place(pid uint32, cgroupID uint64) *rdma.Placement
}

// Rows groups rs by holder: processes by PID (the kernel names the creating
// thread; its thread group is the process), then kernel modules by name.
// sys is the sysfs root for naming uverbs files ("" for /sys); unknown are
// the types the kernel could not dump.
func Rows(rs []rdma.Resource, p Procs, sys string, unknown ...rdma.ResType) []Row {
	type key struct {
		pid    uint32
		module string
	}
	rows := map[key]*Row{}
	devs := map[key]map[string]bool{}
	for i := range rs {
		r := &rs[i]
		k := key{module: r.Owner.KernName}
		if k.module == "" {
			k.pid = r.Owner.PID
			if g := p.TGID(k.pid); g != 0 {
				k.pid = g
			}
		}
		row := rows[k]
		if row == nil {
			row = &Row{PID: k.pid, Module: k.module, Counts: make([]int, len(rdma.ResourceTypes))}
			rows[k], devs[k] = row, map[string]bool{}
		}
		for j, t := range rdma.ResourceTypes {
			if t == r.Type {
				row.Counts[j]++
			}
		}
		if r.DevName != "" {
			devs[k][r.DevName] = true
		}
	}
	out := make([]Row, 0, len(rows))
	for k, row := range rows {
		for j, t := range rdma.ResourceTypes {
			for _, u := range unknown {
				if t == u {
					row.Counts[j] = -1
				}
			}
		}
		for d := range devs[k] {
			row.Devices = append(row.Devices, d)
		}
		sort.Strings(row.Devices)
		if row.Module == "" {
			row.Comm = p.Comm(row.PID)
			row.Files = p.RDMAFiles(row.PID, sys)
			row.Place = p.Place(row.PID, 0)
		}
		out = append(out, *row)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Module == "") != (b.Module == "") {
			return a.Module == ""
		}
		if a.Module != b.Module {
			return a.Module < b.Module
		}
		return a.PID < b.PID
	})
	return out
}

// Unreadable lists the processes among rows whose open files could not be
// read for want of permission: /proc/PID/fd of another user's process
// needs root (CAP_SYS_PTRACE). Their files show as "-", which would read
// as "none" without a word. procRoot is "" for /proc.
func Unreadable(rows []Row, procRoot string) []uint32 {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return unreadable(rows, func(pid uint32) error {
		_, err := os.ReadDir(procRoot + "/" + strconv.FormatUint(uint64(pid), 10) + "/fd")
		return err
	})
}

func unreadable(rows []Row, readFDs func(pid uint32) error) []uint32 {
	var out []uint32
	for i := range rows {
		r := &rows[i]
		if r.Module != "" || len(r.Files) > 0 {
			continue
		}
		if err := readFDs(r.PID); errors.Is(err, fs.ErrPermission) {
			out = append(out, r.PID)
		}
	}
	return out
}

// UnreadableNote is the one line that says why the files of pids are not
// shown, or "" when there are none.
func UnreadableNote(pids []uint32) string {
	if len(pids) == 0 {
		return ""
	}
	list := make([]string, 0, 5)
	for i, p := range pids {
		if i == 4 {
			list = append(list, "...")
			break
		}
		list = append(list, strconv.FormatUint(uint64(p), 10))
	}
	what := "process " + list[0]
	if len(pids) > 1 {
		what = strconv.Itoa(len(pids)) + " processes (" + strings.Join(list, ", ") + ")"
	}
	return "the open files of " + what + " are not shown (\"-\"): no permission to read another user's /proc/PID/fd; run as root or with CAP_SYS_PTRACE to see them"
}
