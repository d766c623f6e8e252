//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/cgroup"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A Kubernetes pod's container (containerd, systemd cgroup driver) and a
// podman container: the two places the workloads below run in.
const (
	podUID   = "3f1c2a4e-8b6d-4e2f-9a1b-7c5d3e9f0a12"
	criID    = "aa11bb22cc33dd44ee55ff6600778899aabbccddeeff00112233445566778899"
	podmanID = "5e7a0c1d2b3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
)

var (
	podCgroup    = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + strings.ReplaceAll(podUID, "-", "_") + ".slice/cri-containerd-" + criID + ".scope"
	podmanCgroup = "/machine.slice/libpod-" + podmanID + ".scope"
)

// TestTwoWorkloadsInTwoContainers runs an rping pair in a pod's cgroup and
// an ib_write_bw -R pair in a podman container's, each program in a pid
// namespace of its own (where it is pid 1, as under `unshare --pid
// --fork`). res -j must place every QP of each pair in its cgroup with its
// container and pod, and its pid inside its namespace; a trace filtered by
// the pod's cgroup must deliver that pair's events only, the kernel
// discarding the other's (counted); an unfiltered trace must place both.
func TestTwoWorkloadsInTwoContainers(t *testing.T) {
	needDevice(t)
	mount, err := cgroup.Mount()
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	dirs := map[string]*os.File{}
	for _, rel := range []string{podCgroup, podmanCgroup} {
		path := filepath.Join(mount, rel)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dirs[rel] = f
		t.Cleanup(func() { f.Close(); _ = os.Remove(path) }) // after the workloads are reaped
	}

	var filtered, all *tracing
	if _, err := os.Stat("/sys/kernel/btf/ib_core"); err == nil {
		filtered = startTrace(t, "--no-snapshot", "--filter-cgroup", podCgroup)
		all = startTrace(t, "--no-snapshot")
	} else {
		t.Logf("kernel %s has no module BTF: res only", release(t))
	}

	in := func(rel string) func(*syscall.SysProcAttr) {
		return func(a *syscall.SysProcAttr) {
			a.Cloneflags = syscall.CLONE_NEWPID
			a.UseCgroupFD, a.CgroupFD = true, int(dirs[rel].Fd())
		}
	}
	w := &workload{t: t}
	t.Cleanup(w.stop)
	rping := &pair{qps: 1,
		server: func(p string) []string { return []string{"rping", "-s", "-a", addr, "-p", p, "-C", "10000000"} },
		client: func(p string) []string { return []string{"rping", "-c", "-a", addr, "-p", p, "-C", "10000000"} }}
	bw := &pair{qps: 1,
		server: func(p string) []string {
			return []string{"ib_write_bw", "-d", device, "-R", "-p", p, "-n", "100000000"}
		},
		client: func(p string) []string {
			return []string{"ib_write_bw", "-d", device, "-R", "-p", p, "-n", "100000000", addr}
		}}
	w.place = in(podCgroup)
	w.startPair(rping)
	w.place = in(podmanCgroup)
	w.startPair(bw)
	w.place = nil

	// Host pid of each program and of its threads (res reports the thread
	// that made an object) -> its cgroup.
	where := map[int]string{}
	for p, rel := range map[*pair]string{rping: podCgroup, bw: podmanCgroup} {
		for _, c := range []*exec.Cmd{p.s, p.c} {
			for tid := range threads(c) {
				where[int(tid)] = rel
			}
		}
	}
	wantPlace := func(what string, p place, o any, rel string) {
		t.Helper()
		want := map[string]string{"cgroup": rel, "pidns-pid": "1"}
		if rel == podCgroup {
			want["runtime"], want["container-id"], want["pod-uid"] = "containerd", criID, podUID
		} else {
			want["runtime"], want["container-id"] = "podman", podmanID
		}
		got := p.keys()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %s (%+v)", what, k, got[k], v, o)
			}
		}
	}

	var qps []resRow
	if err := json.Unmarshal(run(t, *rdmatraceBin, "res", "qp", "-j"), &qps); err != nil {
		t.Fatal(err)
	}
	placedQPs := map[string]int{}
	for _, q := range qps {
		rel, ours := where[q.owner()]
		if !ours || q.Type != "RC" {
			continue
		}
		wantPlace("res qp pid "+q.pid(), q.place, q, rel)
		placedQPs[rel]++
	}
	if placedQPs[podCgroup] < 2 || placedQPs[podmanCgroup] < 2 {
		t.Errorf("res qp -j: RC QPs of the workloads by cgroup %v, want 2 of each pair", placedQPs)
	}
	// The place filters of res select one pair.
	for rel, want := range map[string]string{podCgroup: "pod " + podUID, podmanCgroup: "container " + podmanID[:12]} {
		var got []resRow
		if err := json.Unmarshal(run(t, *rdmatraceBin, append([]string{"res", "qp", "-j"}, strings.Fields(want)...)...), &got); err != nil {
			t.Fatal(err)
		}
		for _, q := range got {
			if q.Cgroup != rel {
				t.Errorf("res qp %s: a QP of %q (%+v)", want, q.Cgroup, q)
			}
		}
		if len(got) < 2 {
			t.Errorf("res qp %s: %d QPs, want the pair's 2", want, len(got))
		}
	}
	if filtered == nil {
		return
	}

	w.stop()
	waitFor(t, 90*time.Second, "the killed programs' QPs and CM_IDs to leave rdma res", func() bool {
		return len(userObjects(t, rdma.ResQP))+len(userObjects(t, rdma.ResCMID)) == 0
	})
	time.Sleep(time.Second)
	fevs, aevs := filtered.stop(), all.stop()

	// Unfiltered: both pairs' QP creations, each placed.
	created := map[string]int{}
	for _, e := range aevs {
		rel, ours := where[int(e.Owner.PID)]
		if e.Kind != rdma.EvCreate || !e.Has(rdma.EvHasRes) || e.Type != rdma.ResQP || !e.Has(rdma.EvHasOwner) || !ours {
			continue
		}
		wantPlace("trace create qp", placeOf(e.Owner.Place), e, rel)
		created[rel]++
	}
	if created[podCgroup] < 2 || created[podmanCgroup] < 2 {
		t.Errorf("unfiltered trace: QP creates by cgroup %v, want both pairs'", created)
	}
	// Filtered by the pod's cgroup: only rping's events with an owner.
	fcreated := 0
	for _, e := range fevs {
		if !e.Has(rdma.EvHasOwner) {
			continue // no owner (a kernel object's event): user space passes those
		}
		if got := placeOf(e.Owner.Place).Cgroup; got != podCgroup {
			t.Errorf("trace --filter-cgroup %s delivered an event of %q: %v", podCgroup, got, e)
			continue
		}
		if e.Kind == rdma.EvCreate && e.Has(rdma.EvHasRes) && e.Type == rdma.ResQP {
			fcreated++
		}
	}
	if fcreated < 2 {
		t.Errorf("trace --filter-cgroup: %d QP creates of rping's pair, want 2", fcreated)
	}
	said := filtered.stderr.String()
	if !strings.Contains(said, "the kernel discarded") || strings.Contains(said, "discarded 0 events") {
		t.Errorf("trace --filter-cgroup: the kernel discarded nothing of ib_write_bw's events: %q", said)
	}
	t.Logf("filtered trace: %d events delivered (unfiltered: %d); %s", len(fevs), len(aevs), strings.TrimSpace(said))
}
