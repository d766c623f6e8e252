package container

import (
	"strings"
	"testing"
)

const (
	cid = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
	uid = "74c13223-5a00-11e9-b385-42010a80018d"
)

// The layouts below are what the runtimes make (their /proc/PID/cgroup
// lines, cgroup v2 and v1), one per runtime and driver.
func TestIdentify(t *testing.T) {
	us := strings.ReplaceAll(uid, "-", "_")
	for _, c := range []struct {
		path string
		want Identity
	}{
		{"/system.slice/docker-" + cid + ".scope", Identity{Runtime: "docker", ID: cid, Unit: "docker-" + cid + ".scope"}},
		{"/docker/" + cid, Identity{Runtime: "docker", ID: cid}},
		// Kubernetes, containerd, systemd driver, each QoS class.
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/cri-containerd-" + cid + ".scope",
			Identity{Runtime: "containerd", ID: cid, PodUID: uid, Unit: "cri-containerd-" + cid + ".scope"}},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + us + ".slice/cri-containerd-" + cid + ".scope",
			Identity{Runtime: "containerd", ID: cid, PodUID: uid, Unit: "cri-containerd-" + cid + ".scope"}},
		{"/kubepods.slice/kubepods-pod" + us + ".slice/cri-containerd-" + cid + ".scope",
			Identity{Runtime: "containerd", ID: cid, PodUID: uid, Unit: "cri-containerd-" + cid + ".scope"}},
		// Kubernetes, cgroupfs driver (k3s, kind): the runtime is not in the path.
		{"/kubepods/besteffort/pod" + uid + "/" + cid, Identity{ID: cid, PodUID: uid}},
		{"/kubepods/pod" + uid + "/" + cid, Identity{ID: cid, PodUID: uid}},
		// The pod's own cgroup: a pod, no container yet.
		{"/kubepods/burstable/pod" + uid, Identity{PodUID: uid}},
		// cri-o, the container and its monitor.
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/crio-" + cid + ".scope",
			Identity{Runtime: "cri-o", ID: cid, PodUID: uid, Unit: "crio-" + cid + ".scope"}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/crio-conmon-" + cid + ".scope",
			Identity{Runtime: "cri-o", ID: cid, Monitor: true, PodUID: uid, Unit: "crio-conmon-" + cid + ".scope"}},
		// podman: rootful, rootless (systemd), the nested "container" cgroup of podman 4, cgroupfs.
		{"/machine.slice/libpod-" + cid + ".scope", Identity{Runtime: "podman", ID: cid, Unit: "libpod-" + cid + ".scope"}},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope/container",
			Identity{Runtime: "podman", ID: cid, Unit: "libpod-" + cid + ".scope"}},
		{"/machine.slice/libpod-conmon-" + cid + ".scope", Identity{Runtime: "podman", ID: cid, Monitor: true, Unit: "libpod-conmon-" + cid + ".scope"}},
		{"/libpod_parent/libpod-" + cid, Identity{Runtime: "podman", ID: cid}},
		{"/system.slice/nerdctl-" + cid + ".scope", Identity{Runtime: "containerd", ID: cid, Unit: "nerdctl-" + cid + ".scope"}},
		// Slurm: cgroup v2 (slurmstepd.scope) and v1.
		{"/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0",
			Identity{Runtime: "slurm", SlurmJob: "4242", SlurmStep: "0", Unit: "slurmstepd.scope"}},
		{"/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0",
			Identity{Runtime: "slurm", SlurmJob: "4242", SlurmStep: "batch", Unit: "slurmstepd.scope"}},
		{"/slurm/uid_1000/job_17/step_extern/task_0", Identity{Runtime: "slurm", SlurmJob: "17", SlurmStep: "extern"}},
		// systemd alone.
		{"/user.slice/user-1000.slice/session-3.scope", Identity{Unit: "session-3.scope"}},
		{"/system.slice/rping.service", Identity{Unit: "rping.service"}},
		{"/", Identity{}},
		// Look-alikes that are not containers.
		{"/docker/" + cid[:12], Identity{}},
		{"/system.slice/docker-" + strings.ToUpper(cid) + ".scope", Identity{Unit: "docker-" + strings.ToUpper(cid) + ".scope"}},
		{"/kubepods/podnot-a-uid/" + cid, Identity{ID: cid}},
		{"/rdmatrace-leaks-4242", Identity{}},
	} {
		if got := Identify(c.path); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.path, got, c.want)
		}
	}
}

// FuzzIdentify: cgroup names below a delegated subtree are chosen by
// unprivileged users; whatever they are, an id is 64 hex digits and a pod
// UID a UUID.
func FuzzIdentify(f *testing.F) {
	f.Add("/kubepods.slice/kubepods-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice/crio-" + cid + ".scope")
	f.Add("/system.slice/slurmstepd.scope/job_1/step_2")
	f.Add("/docker/" + cid)
	f.Fuzz(func(t *testing.T, path string) {
		id := Identify(path)
		if id.ID != "" && !isContainerID(id.ID) {
			t.Errorf("id %q", id.ID)
		}
		if id.PodUID != "" && !isUUID(id.PodUID) {
			t.Errorf("pod uid %q", id.PodUID)
		}
		if id.SlurmStep != "" && id.SlurmJob == "" {
			t.Errorf("a step without a job: %+v", id)
		}
	})
}
