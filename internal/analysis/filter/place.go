package filter

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PlaceKeys select by where the owner runs: cgroup (that cgroup v2 path
// or one below it), container (an id or its first characters, as runtimes
// print them short) and pod (a Kubernetes pod UID).
var PlaceKeys = []string{"cgroup", "container", "pod"}

// placeValue reads a place key from p.
func placeValue(name string, p *rdma.Placement) (string, bool) {
	if p == nil {
		return "", false
	}
	switch name {
	case "cgroup":
		return p.Cgroup, p.Cgroup != ""
	case "container":
		return p.ContainerID, p.ContainerID != ""
	case "pod":
		return p.PodUID, p.PodUID != ""
	}
	return "", false
}

// placeWithin says whether v, a place key's value, is what want selects.
func placeWithin(name, v, want string) bool {
	switch name {
	case "cgroup":
		want = "/" + strings.Trim(want, "/")
		return v == want || want == "/" || strings.HasPrefix(v, want+"/")
	case "container":
		return strings.HasPrefix(v, strings.ToLower(want))
	}
	return strings.EqualFold(v, want)
}

// placeKey is a place key for resources.
func placeKey(name string) *key {
	return &key{name: name,
		str:    func(r *rdma.Resource) (string, bool) { return placeValue(name, r.Owner.Place) },
		within: func(v, want string) bool { return placeWithin(name, v, want) }}
}
