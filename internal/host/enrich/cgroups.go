package enrich

import (
	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PlacementOf is what a cgroup path alone says: the container and pod.
func PlacementOf(cgroupPath string) rdma.Placement {
	p := rdma.Placement{Cgroup: cgroupPath}
	identify(&p, nil)
	return p
}

// CgroupSelector turns place filters (cgroup, container, pod) into the
// kernel's keys: the ids of the cgroups whose place match keeps. Call the
// function it returns again to follow cgroups made since (containers
// start); it walks the hierarchy at most once a second. An error says
// there is no cgroup v2 hierarchy to walk: the filters then act in user
// space only.
func (x *Enricher) CgroupSelector(match func(*rdma.Placement) bool) (func() []uint64, error) {
	root := x.opts.CgroupRoot
	if root == "" {
		var err error
		if root, err = cgroup.Mount(); err != nil {
			return nil, err
		}
	}
	r := cgroup.NewResolver(root)
	pods := x.podNames()
	return func() []uint64 {
		var ids []uint64
		for id, path := range r.Rescan() {
			// A pod's name too: pod NAMESPACE/NAME selects its cgroups.
			p := rdma.Placement{Cgroup: path}
			if identify(&p, pods); match(&p) {
				ids = append(ids, id)
			}
		}
		return ids
	}, nil
}
