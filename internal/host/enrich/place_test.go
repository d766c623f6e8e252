package enrich

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

const podScope = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d1e2f3a_4b5c_6d7e_8f90_a1b2c3d4e5f6.slice/" +
	"cri-containerd-4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b.scope"

// fakeProc makes /proc/PID with the files the cache reads.
func fakeProc(t *testing.T, root string, pid, cgroupLine, nspid, netns string) {
	t.Helper()
	dir := filepath.Join(root, pid)
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cgroup": cgroupLine + "\n",
		"status": "Name:\trping\nTgid:\t" + pid + "\nPid:\t" + pid + "\nNSpid:\t" + nspid + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("net:["+netns+"]", filepath.Join(dir, "ns", "net")); err != nil {
		t.Fatal(err)
	}
}

func TestPlaceOfAProcessInAPod(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, "4242", "0::"+podScope, "4242\t7", "4026532301")
	// The kubelet's pod log directory names the pod of the UID.
	logs := t.TempDir()
	if err := os.Mkdir(filepath.Join(logs, "train_llm-0_0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := New(Options{ProcRoot: root, CgroupRoot: t.TempDir(), PodLogDir: logs})
	p := c.Place(4242, 0)
	want := rdma.Placement{
		Cgroup: podScope, Runtime: "containerd",
		ContainerID: "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b",
		PodUID:      "0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6", PodNamespace: "train", PodName: "llm-0", NSPid: 7, NetNS: 4026532301,
	}
	if p == nil || *p != want {
		t.Fatalf("Place = %+v, want %+v", p, want)
	}
	if again := c.Place(4242, 0); again != p {
		t.Errorf("a second Place made a new answer: events would allocate")
	}
}

func TestPlaceOfAHostProcessHasNoPidnsPid(t *testing.T) {
	root := t.TempDir()
	fakeProc(t, root, "10", "0::/user.slice/user-0.slice/session-1.scope", "10", "4026531840")
	p := New(Options{ProcRoot: root, CgroupRoot: t.TempDir()}).Place(10, 0)
	if p == nil || p.NSPid != 0 || p.ContainerID != "" || p.Cgroup != "/user.slice/user-0.slice/session-1.scope" || p.NetNS != 4026531840 {
		t.Fatalf("Place = %+v", p)
	}
}

func TestPlaceOfAGoneProcessIsNil(t *testing.T) {
	if p := New(Options{ProcRoot: t.TempDir(), CgroupRoot: t.TempDir()}).Place(99, 0); p != nil {
		t.Fatalf("Place of a missing pid = %+v, want nil", p)
	}
}

// mkCgroup makes root/rel, a stand-in cgroup, and returns its id: the
// directory's inode number, as cgroup v2's ids are.
func mkCgroup(t *testing.T, root, rel string) uint64 {
	t.Helper()
	dir := filepath.Join(root, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// An event's cgroup id names the cgroup it ran in, even after the process
// has gone; a cgroup made after the last walk is found on a later event.
func TestPlaceFromAnEventsCgroupID(t *testing.T) {
	cg := t.TempDir()
	mk := func(rel string) uint64 { return mkCgroup(t, cg, rel) }
	docker := "system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope"
	id := mk(docker)
	c := New(Options{ProcRoot: t.TempDir(), CgroupRoot: cg})
	p := c.Place(555, id)
	if p == nil || p.Runtime != "docker" || p.Cgroup != "/"+docker || p.NetNS != 0 {
		t.Fatalf("Place = %+v, want docker's scope", p)
	}

	// A cgroup made after the walk: made outside and moved in (a rename
	// keeps the inode, which is the id), so the same id is asked twice.
	c.places.cgroups.MinRescan = 0
	outside := t.TempDir()
	dir := filepath.Join(outside, "slurm", "uid_0", "job_42", "step_3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if p := c.Place(556, st.Ino); p != nil {
		t.Fatalf("Place of a cgroup not there yet = %+v, want nil", p)
	}
	if err := os.Rename(filepath.Join(outside, "slurm"), filepath.Join(cg, "slurm")); err != nil {
		t.Fatal(err)
	}
	if p := c.Place(556, st.Ino); p == nil || p.ContainerID != "42.3" || p.Runtime != "slurm" || p.Job() != "42" {
		t.Fatalf("Place after the cgroup appeared = %+v, want Slurm's 42.3", p)
	}
}

// BenchmarkPlaceCached is what every traced event with an owner pays: a
// cached answer (the tracer's Run looks each event's owner up).
func BenchmarkPlaceCached(b *testing.B) {
	c := New(Options{})
	pid := uint32(os.Getpid())
	c.Place(pid, 0)
	b.ReportAllocs()
	for b.Loop() {
		if c.Place(pid, 0) == nil {
			b.Fatal("no place for ourselves")
		}
	}
}

// BenchmarkPlaceFirst is a process's first event: /proc read and parsed.
func BenchmarkPlaceFirst(b *testing.B) {
	pid := uint32(os.Getpid())
	b.ReportAllocs()
	for b.Loop() {
		if New(Options{}).Place(pid, 0) == nil {
			b.Fatal("no place for ourselves")
		}
	}
}
