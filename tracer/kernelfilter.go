package tracer

import (
	"fmt"
	"io"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/launch"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// KernelFilter is what of a command's filter the kernel can check
// (filter.Events is one): a set of pids, and places (cgroup, container,
// pod) that name cgroups.
type KernelFilter interface {
	// PIDs is the pid set, when the filter is one of at most max pids.
	PIDs(max int) ([]uint32, bool)
	HasPlace() bool
	MatchPlace(*rdma.Placement) bool
}

// pushFilters hands the tracer the filters the kernel can check: a set of
// pids, the program's cgroup, the cgroups the cgroup, container and pod
// filters select (found again at each refresh: containers start). What
// they exclude then never reaches user space; user space still applies
// every filter.
func pushFilters(t *Tracer, f KernelFilter, prog *launch.Program, stderr io.Writer) (refresh func(), on bool, err error) {
	refresh = func() {}
	if pids, ok := f.PIDs(4096); ok {
		if err := t.OnlyPIDs(pids); err != nil {
			return nil, false, err
		}
		on = true
	}
	switch {
	case prog != nil && programCgroup(prog) != 0:
		// The program's cgroup holds it and its children; a place filter
		// as well is left to user space.
		if err := t.OnlyCgroups([]uint64{programCgroup(prog)}); err != nil {
			return nil, false, err
		}
		on = true
	case f.HasPlace():
		selected, err := enrich.New(enrich.Options{}).CgroupSelector(f.MatchPlace)
		if err != nil {
			fmt.Fprintf(stderr, "rdmatrace: the cgroup, container and pod filters act in user space: %v\n", err)
			return refresh, on, nil
		}
		if err := t.OnlyCgroups(selected()); err != nil {
			// More cgroups than the map holds: user space filters alone.
			fmt.Fprintf(stderr, "rdmatrace: the cgroup, container and pod filters act in user space: %v\n", err)
			return refresh, on, nil
		}
		warned := false
		refresh = func() {
			if err := t.OnlyCgroups(selected()); err != nil && !warned {
				warned = true
				fmt.Fprintf(stderr, "rdmatrace: the kernel's cgroup filter is no longer updated (%v): events of new cgroups may be missed; --no-kernel-filter avoids it\n", err)
			}
		}
		on = true
	}
	return refresh, on, nil
}
