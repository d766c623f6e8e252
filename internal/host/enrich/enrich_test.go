package enrich

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fakeThread adds a thread's own /proc/TID (as the kernel shows a thread
// by its id) with its comm and the status line naming its process.
func fakeThread(t *testing.T, root, tid, tgid, comm, cgroupLine string) {
	t.Helper()
	fakeProc(t, root, tid, cgroupLine, tid, "4026531840")
	dir := filepath.Join(root, tid)
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\t"+comm+"\nTgid:\t"+tgid+"\nPid:\t"+tid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResourceNamesAProcessAndLeavesAModuleAlone(t *testing.T) {
	root := t.TempDir()
	fakeThread(t, root, "4242", "4242", "rping", "0::"+podScope)
	x := New(Options{ProcRoot: root, CgroupRoot: t.TempDir()})
	user := rdma.Resource{Owner: rdma.Owner{PID: 4242}}
	x.Resource(&user)
	if user.Owner.Comm != "rping" || user.Owner.Place == nil || user.Owner.Place.Runtime != "containerd" {
		t.Errorf("user owner = %+v (place %+v), want rping in its pod", user.Owner, user.Owner.Place)
	}
	kern := rdma.Resource{Owner: rdma.Owner{KernName: "nvme_rdma"}}
	x.Resource(&kern)
	if kern.Owner != (rdma.Owner{KernName: "nvme_rdma"}) {
		t.Errorf("kernel owner = %+v, want it as the kernel gave it", kern.Owner)
	}
}

func TestProcessFoldsTheCreatingThreadIntoItsProcess(t *testing.T) {
	root := t.TempDir()
	fakeThread(t, root, "4242", "4242", "ib_write_bw", "0::/user.slice")
	fakeThread(t, root, "4243", "4242", "worker", "0::/user.slice")
	x := New(Options{ProcRoot: root, CgroupRoot: t.TempDir()})
	o := x.Process(&rdma.Resource{Owner: rdma.Owner{PID: 4243}})
	if o.PID != 4242 || o.TID != 4243 || o.Comm != "worker" || o.Place == nil || o.Place.Cgroup != "/user.slice" {
		t.Errorf("Process = %+v (place %+v), want pid 4242, tid 4243, the thread's comm, the process's place", o, o.Place)
	}
	if o := x.Process(&rdma.Resource{Owner: rdma.Owner{KernName: "smc"}}); o != (rdma.Owner{KernName: "smc"}) {
		t.Errorf("Process of a module's object = %+v", o)
	}
	// A process gone: the thread id is all there is.
	if o := x.Process(&rdma.Resource{Owner: rdma.Owner{PID: 99}}); o.PID != 99 || o.TID != 99 || o.Place != nil {
		t.Errorf("Process of a gone thread = %+v", o)
	}
}

func TestEventNamesHoldersAndSMCOwnersOnlyWhenAsked(t *testing.T) {
	root := t.TempDir()
	fakeThread(t, root, "300", "300", "python3", "0::/")
	if err := os.MkdirAll(filepath.Join(root, "300", "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[777]", filepath.Join(root, "300", "fd", "3")); err != nil {
		t.Fatal(err)
	}
	busy := func() *rdma.Event { return &rdma.Event{Kind: rdma.EvPortBusy} }
	smc := func() *rdma.Event {
		return &rdma.Event{Kind: rdma.EvSMCFallback, SMCFallback: rdma.SMCFallback{Inode: 777}}
	}

	plain := New(Options{ProcRoot: root, CgroupRoot: t.TempDir()})
	b, s := busy(), smc()
	plain.Event(b)
	plain.Event(s)
	if b.PortBusy.Holders != nil || s.Has(rdma.EvHasOwner) {
		t.Errorf("an Enricher without options named holders %q or an SMC owner %+v", b.PortBusy.Holders, s.Owner)
	}

	asked := 0
	live := New(Options{ProcRoot: root, CgroupRoot: t.TempDir(), SMCOwners: true}).
		Then(PortHolders(func(*rdma.Event) []string { asked++; return []string{"python3[300] tcp LISTEN 0.0.0.0:7400"} }))
	b, s = busy(), smc()
	live.Event(b)
	live.Event(s)
	if len(b.PortBusy.Holders) != 1 || asked != 1 {
		t.Errorf("holders = %q after %d asks, want one holder, one ask", b.PortBusy.Holders, asked)
	}
	if !s.Has(rdma.EvHasOwner) || s.Owner.PID != 300 || s.Owner.Comm != "python3" {
		t.Errorf("SMC owner = %+v, want python3[300]", s.Owner)
	}
	// An event that has its holders (a recording) is not asked again.
	b.PortBusy.Holders = []string{}
	live.Event(b)
	if asked != 1 {
		t.Errorf("holders asked again for an event that has them")
	}
}

func TestCgroupSelectorTurnsPlaceFiltersIntoCgroupIDs(t *testing.T) {
	cg := t.TempDir()
	id := func(rel string) uint64 { return mkCgroup(t, cg, rel) }
	docker := id("system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope")
	id("user.slice/session-1.scope")
	x := New(Options{ProcRoot: t.TempDir(), CgroupRoot: cg})
	selected, err := x.CgroupSelector(func(p *rdma.Placement) bool { return p.Runtime == "docker" })
	if err != nil {
		t.Fatal(err)
	}
	if ids := selected(); len(ids) != 1 || ids[0] != docker {
		t.Errorf("selected %v, want the docker scope's id %d", ids, docker)
	}
}

// A port's async event gets what lives on its port, from the hook, once;
// an object's async event and an Enricher without the hook get nothing.
func TestEventNamesAPortsObjectsOnlyWhenAsked(t *testing.T) {
	port := rdma.Event{Kind: rdma.EvAsync, Resource: rdma.Resource{DevName: "rxe0", Port: 1, Has: rdma.HasPort}, Flags: rdma.EvHasDev}
	New(Options{}).Event(&port)
	if port.Fault.OnPort != nil {
		t.Errorf("an Enricher without the PortObjects stage named %q", port.Fault.OnPort)
	}
	asked := 0
	x := New(Options{}).Then(PortObjects(func(*rdma.Event) []string { asked++; return []string{"2 qp of rping[212]"} }))
	x.Event(&port)
	qp := rdma.Event{Kind: rdma.EvAsync, Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0"}, Flags: rdma.EvHasDev | rdma.EvHasRes}
	x.Event(&qp)
	if len(port.Fault.OnPort) != 1 || qp.Fault.OnPort != nil || asked != 1 {
		t.Errorf("port event %q, QP event %q, %d lookups", port.Fault.OnPort, qp.Fault.OnPort, asked)
	}
}
