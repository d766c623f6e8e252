package filter

import (
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// PlaceKeys select by where the owner runs: cgroup (that cgroup v2 path
// or one below it), container (an id or its first characters, as runtimes
// print them short), pod (a Kubernetes pod's UID, or NAMESPACE/NAME where
// the node names its pods) and job (a Slurm job's id, or JOB.STEP).
var PlaceKeys = []string{"cgroup", "container", "pod", "job"}

// placeValue reads a place key from p. A pod is its UID and, when known,
// its NAMESPACE/NAME after a space (neither has one).
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
		if n := p.Pod(); n != "" {
			return p.PodUID + " " + n, p.PodUID != ""
		}
		return p.PodUID, p.PodUID != ""
	case "job":
		// job.step: the job selects its steps, job.step one of them.
		return p.ContainerID, p.Job() != ""
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
	case "pod":
		uid, pod, _ := strings.Cut(v, " ")
		if strings.Contains(want, "/") {
			return pod == want // names are case-sensitive
		}
		return strings.EqualFold(uid, want)
	case "job":
		return v == want || strings.HasPrefix(v, want+".")
	}
	return strings.EqualFold(v, want)
}

// placeKey is a place key for resources.
func placeKey(name string) *key {
	return &key{name: name,
		str:    func(r *rdma.Resource) (string, bool) { return placeValue(name, r.Owner.Place) },
		within: func(v, want string) bool { return placeWithin(name, v, want) }}
}
