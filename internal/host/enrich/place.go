package enrich

import (
	"strings"

	"github.com/prometheus/procfs"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/host/container"
	"github.com/rdmatrace/rdmatrace/internal/host/podnames"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// maxPlaces bounds the cache: a long trace of a busy host meets many
// short-lived processes; past the bound the cache starts again.
const maxPlaces = 4096

// placeCache says where processes run: cgroup, container, pod, pid
// namespace and network namespace. One answer per process and cgroup is
// kept and shared, so events can carry it without allocating.
type placeCache struct {
	fs      procfs.FS
	fsErr   error
	cgroups *cgroup.Resolver // nil without cgroup v2
	pods    *podnames.Names
	places  map[placeKey]placed
}

// placed is a cached answer; unresolved says the event's cgroup id was
// not found yet (a cgroup made after the last walk), to be asked again.
type placed struct {
	place      *rdma.Placement
	unresolved bool
}

type placeKey struct {
	pid      uint32
	cgroupID uint64
}

// newPlaceCache reads processes under procRoot ("" for /proc) and
// resolves cgroup ids under cgroupRoot ("" for the cgroup v2 mount; no
// ids are resolved when there is none).
func newPlaceCache(procRoot, cgroupRoot string, pods *podnames.Names) *placeCache {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	if cgroupRoot == "" {
		cgroupRoot, _ = cgroup.Mount()
	}
	c := &placeCache{places: map[placeKey]placed{}, pods: pods}
	c.fs, c.fsErr = procfs.NewFS(procRoot)
	if cgroupRoot != "" {
		c.cgroups = cgroup.NewResolver(cgroupRoot)
	}
	return c
}

// place says where process pid runs; cgroupID, when not 0, is the cgroup
// it ran in when an event happened (from BPF) and names the cgroup even
// after the process has gone. nil when nothing is known (a kernel owner,
// a process gone, no /proc) or c is nil.
func (c *placeCache) place(pid uint32, cgroupID uint64) *rdma.Placement {
	if c == nil || pid == 0 && cgroupID == 0 {
		return nil
	}
	key := placeKey{pid, cgroupID}
	got, ok := c.places[key]
	if ok && !got.unresolved {
		return got.place
	}
	if ok {
		// Only the cgroup was missing: the resolver rescans at most once
		// a second, so asking again per event costs a map lookup.
		path, found := c.cgroups.Path(cgroupID)
		if !found {
			return got.place
		}
		var p rdma.Placement
		if got.place != nil {
			p = *got.place
		}
		p.Cgroup = path
		identify(&p, c.pods)
		got = placed{place: &p}
	} else {
		got = c.look(pid, cgroupID)
	}
	if len(c.places) >= maxPlaces {
		clear(c.places)
	}
	c.places[key] = got
	return got.place
}

func (c *placeCache) look(pid uint32, cgroupID uint64) placed {
	var p rdma.Placement
	unresolved := false
	if cgroupID != 0 && c.cgroups != nil {
		path, ok := c.cgroups.Path(cgroupID)
		p.Cgroup, unresolved = path, !ok
	}
	if pid != 0 && c.fsErr == nil {
		proc, err := c.fs.Proc(int(pid))
		if err == nil {
			if p.Cgroup == "" && cgroupID == 0 {
				// No event named the cgroup (a netlink snapshot): the
				// process's own, now.
				p.Cgroup = unifiedPath(proc)
			}
			if st, err := proc.NewStatus(); err == nil && len(st.NSpids) > 1 {
				p.NSPid = uint32(st.NSpids[len(st.NSpids)-1])
			}
			if ns, err := proc.Namespaces(); err == nil {
				if n, ok := ns["net"]; ok {
					p.NetNS = uint64(n.Inode)
				}
			}
		}
	}
	identify(&p, c.pods)
	if p == (rdma.Placement{}) {
		return placed{unresolved: unresolved}
	}
	return placed{place: &p, unresolved: unresolved}
}

// identify names the container and pod of p's cgroup path, and the pod's
// namespace and name where pods (nil: none) knows them.
func identify(p *rdma.Placement, pods *podnames.Names) {
	if p.Cgroup == "" {
		return
	}
	id := container.Identify(p.Cgroup)
	p.Runtime, p.ContainerID, p.PodUID = id.Runtime, id.ID, id.PodUID
	if id.Runtime == "slurm" && id.SlurmJob != "" {
		// Slurm's own name of a step: job.step.
		p.ContainerID = id.SlurmJob
		if id.SlurmStep != "" {
			p.ContainerID += "." + id.SlurmStep
		}
	}
	if pod, ok := pods.Pod(p.PodUID); ok {
		p.PodNamespace, p.PodName = pod.Namespace, pod.Name
	}
}

// unifiedPath is the process's cgroup v2 path ("0::/path" in
// /proc/PID/cgroup), or "" on a v1-only host.
func unifiedPath(proc procfs.Proc) string {
	cgs, err := proc.Cgroups()
	if err != nil {
		return ""
	}
	for _, cg := range cgs {
		if cg.HierarchyID == 0 && len(cg.Controllers) == 0 {
			return strings.TrimSuffix(cg.Path, " (deleted)")
		}
	}
	return ""
}
