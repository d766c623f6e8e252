package filter

import (
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var (
	inPod = &rdma.Placement{Cgroup: "/kubepods.slice/kubepods-pod0d1e.slice/cri-containerd-4f3c2b1a0e9d8c7b.scope",
		Runtime: "containerd", ContainerID: "4f3c2b1a0e9d8c7b", PodUID: "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"}
	onHost = &rdma.Placement{Cgroup: "/user.slice/user-0.slice/session-1.scope"}
	// Slurm's cgroup v2 layout (slurmstepd.scope) and its v1 layout, as
	// enrich places them (container.Identify).
	inStep  = &rdma.Placement{Cgroup: "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", Runtime: "slurm", ContainerID: "4242.0"}
	inJobV1 = &rdma.Placement{Cgroup: "/slurm/uid_1000/job_17/step_batch/task_0", Runtime: "slurm", ContainerID: "17.batch"}
	named   = &rdma.Placement{PodUID: "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", PodNamespace: "train", PodName: "llm-0"}
)

// Place keys select a cgroup and everything below it, a container by the
// first characters of its id, a pod by its UID or NAMESPACE/NAME, a Slurm
// job by its id or job.step; an owner nobody placed matches none of them.
func TestPlaceKeys(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		place *rdma.Placement
		want  bool
	}{
		{"container 4f3c2b1a0e9d", inPod, true},
		{"container 4F3C", inPod, true},
		{"container 5f3c", inPod, false},
		{"container 4f3c", onHost, false},
		{"container 4f3c", nil, false},
		{"pod 0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", inPod, true},
		{"pod 0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f7,0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", inPod, true},
		{"cgroup /kubepods.slice", inPod, true},
		{"cgroup kubepods.slice/", inPod, true},
		{"cgroup /kubepods", inPod, false}, // a path, not a string prefix
		{"cgroup /", onHost, true},
		{"cgroup /user.slice/user-0.slice/session-1.scope", onHost, true},
		{"job 4242", inStep, true},
		{"job 4242.0", inStep, true},
		{"job 4242.1", inStep, false},
		{"job 424", inStep, false}, // a job, not a string prefix
		{"job 17", inJobV1, true},
		{"job 1,17", inJobV1, true},
		{"job 17.batch", inJobV1, true},
		{"job 4242", inPod, false}, // a container id is no job
		{"job 4242", nil, false},
		{"pod train/llm-0", named, true},
		{"pod 0D1E2F3A-4B5C-6D7E-8F90-A1B2C3D4E5F6", named, true},
		{"pod train/llm-1,train/llm-0", named, true},
		{"pod Train/llm-0", named, false},
		{"pod train/llm-0", inPod, false}, // its name unknown
		{"pod llm-0", named, false},       // a name alone is no UID
	} {
		r := rdma.Resource{Type: rdma.ResQP, Owner: rdma.Owner{PID: 7, Place: tc.place}, Has: rdma.HasPID}
		f, err := Parse(rdma.ResQP, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := f.Match(&r); got != tc.want {
			t.Errorf("res %s on %+v: %v, want %v", tc.expr, tc.place, got, tc.want)
		}
		ef, err := ParseEvents(append([]string{"qp"}, strings.Fields(tc.expr)...))
		if err != nil {
			t.Fatalf("events %s: %v", tc.expr, err)
		}
		e := rdma.Event{Resource: rdma.Resource{Type: rdma.ResQP, Owner: r.Owner}, Flags: rdma.EvHasRes | rdma.EvHasOwner}
		if got := ef.Match(&e); got != tc.want {
			t.Errorf("trace %s on %+v: %v, want %v", tc.expr, tc.place, got, tc.want)
		}
	}
}

func TestPushedDownForms(t *testing.T) {
	f, err := ParseEvents([]string{"pid", "10,20-22", "container", "4f3c"})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := f.PIDs(16); !ok || len(p) != 4 || p[0] != 10 || p[3] != 22 {
		t.Errorf("PIDs = %v, %v; want 10 20 21 22", p, ok)
	}
	if _, ok := f.PIDs(3); ok {
		t.Error("4 pids fit a set of 3")
	}
	if !f.HasPlace() || !f.MatchPlace(inPod) || f.MatchPlace(onHost) || f.MatchPlace(nil) {
		t.Error("MatchPlace does not follow the container filter")
	}
	wide, _ := ParseEvents([]string{"pid", "1-4294967295"})
	if _, ok := wide.PIDs(4096); ok {
		t.Error("every pid was pushed down as a set")
	}
	none, _ := ParseEvents(nil)
	if _, ok := none.PIDs(16); ok || none.HasPlace() {
		t.Error("no filter reads as one")
	}
}
