// Package container names what a cgroup v2 path belongs to: the container
// and its runtime, the Kubernetes pod, the Slurm job step, the systemd
// unit. It reads only the path's shape, the names runtimes and systemd
// give their cgroups; nothing is looked up.
package container

import (
	"strings"
)

// Identity is what a cgroup path says about its processes. Empty fields
// are unknown.
type Identity struct {
	Runtime string // docker, containerd, cri-o, podman, slurm; "" when unknown
	ID      string // the container id (64 hex digits as runtimes print them)
	// Monitor is set for a runtime's per-container monitor (conmon), whose
	// cgroup names the container it watches but holds none of its processes.
	Monitor   bool
	PodUID    string // Kubernetes pod UID, with dashes
	SlurmJob  string // job id
	SlurmStep string // step id: a number, batch, extern or interactive
	Unit      string // innermost systemd .service or .scope
}

// scopes maps the prefixes of systemd-driver scopes to their runtimes.
var scopes = []struct{ prefix, runtime string }{
	{"cri-containerd-", "containerd"},
	{"crio-conmon-", "cri-o"},
	{"crio-", "cri-o"},
	{"libpod-conmon-", "podman"},
	{"libpod-", "podman"},
	{"docker-", "docker"},
	{"nerdctl-", "containerd"},
}

// Identify reads a cgroup path such as
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope.
func Identify(path string) Identity {
	var id Identity
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		parent := ""
		if i > 0 {
			parent = parts[i-1]
		}
		switch {
		case strings.HasSuffix(p, ".service") || strings.HasSuffix(p, ".scope"):
			id.Unit = p
		}
		if uid, ok := podUID(p); ok {
			id.PodUID = uid
			continue
		}
		if j, ok := strings.CutPrefix(p, "job_"); ok && j != "" {
			id.Runtime, id.SlurmJob, id.SlurmStep = "slurm", j, ""
			continue
		}
		if s, ok := strings.CutPrefix(p, "step_"); ok && id.SlurmJob != "" {
			id.SlurmStep = s
			continue
		}
		if c, runtime, monitor, ok := scoped(p); ok {
			id.Runtime, id.ID, id.Monitor = runtime, c, monitor
			continue
		}
		if isContainerID(p) {
			// cgroupfs drivers: the bare id below the runtime's or the pod's cgroup.
			id.ID, id.Monitor = p, false
			switch {
			case parent == "docker":
				id.Runtime = "docker"
			case parent == "libpod_parent":
				id.Runtime = "podman"
			default:
				// Below kubepods/pod<uid>: containerd or cri-dockerd, the
				// path does not say which.
				id.Runtime = ""
			}
		}
	}
	return id
}

// scoped reads "<runtime>-<id>.scope" (systemd drivers) and podman's
// cgroupfs "libpod-<id>".
func scoped(p string) (id, runtime string, monitor, ok bool) {
	base := strings.TrimSuffix(p, ".scope")
	for _, s := range scopes {
		if c, found := strings.CutPrefix(base, s.prefix); found && isContainerID(c) {
			return c, s.runtime, strings.Contains(s.prefix, "conmon"), true
		}
	}
	return "", "", false, false
}

// podUID reads the pod's cgroup: pod<uid> (cgroupfs) or
// kubepods[-<qos>]-pod<uid with underscores>.slice (systemd).
func podUID(p string) (string, bool) {
	var rest string
	if r, ok := strings.CutPrefix(p, "pod"); ok {
		rest = r
	} else if strings.HasPrefix(p, "kubepods") && strings.HasSuffix(p, ".slice") {
		i := strings.LastIndex(p, "-pod")
		if i < 0 {
			return "", false
		}
		rest = strings.ReplaceAll(strings.TrimSuffix(p[i+4:], ".slice"), "_", "-")
	} else {
		return "", false
	}
	if !isUUID(rest) {
		return "", false
	}
	return rest, true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c rune) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
