package leaks

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// script builds events at given offsets from t0.
// script builds a run's events. It keeps pointers, so that what res
// returns can still be changed after later events are added (a slice of
// values would move under those pointers when it grows).
type script struct{ evs []*rdma.Event }

// events is the run's events in order.
func (sc *script) events() []rdma.Event {
	out := make([]rdma.Event, len(sc.evs))
	for i, e := range sc.evs {
		out[i] = *e
	}
	return out
}

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func (sc *script) res(s float64, kind rdma.EventKind, res rdma.ResType, id uint32, pid uint32, comm string) *rdma.Event {
	e := rdma.Event{Kind: kind, Resource: rdma.Resource{Type: res, DevIndex: 1, DevName: "rxe0"}, ID: id, Time: at(s),
		Mono: uint64(s * 1e9), Flags: rdma.EvHasRes | rdma.EvHasDev}
	if pid != 0 {
		e.Owner = rdma.Owner{PID: pid, TID: pid, Comm: comm}
		e.Flags |= rdma.EvHasOwner | rdma.EvUser
		e.Actor = e.Owner
	} else {
		e.Owner.KernName = comm
		e.Actor = rdma.Owner{PID: 224, TID: 224, Comm: "rdma"}
	}
	if res == rdma.ResQP {
		e.LQPN, e.QPType, e.ID = id, rdma.QPTypeRC, 0
		e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		if pid == 0 {
			e.QPType, e.Port = rdma.QPTypeGSI, 1
		}
	}
	sc.evs = append(sc.evs, &e)
	return &e
}

func (sc *script) dev(s float64, kind rdma.EventKind) {
	sc.evs = append(sc.evs, &rdma.Event{Kind: kind, Resource: rdma.Resource{DevIndex: 1, DevName: "rxe0"}, Time: at(s), Mono: uint64(s * 1e9),
		Flags: rdma.EvHasDev, Actor: rdma.Owner{PID: 224, TID: 224, Comm: "rdma"}})
}

// fakeProc makes a /proc with fd links and parents, and a /sys naming
// uverbs0's device.
func fakeProc(t *testing.T, files map[uint32][]string, parents map[uint32]uint32) (procRoot, sysRoot string) {
	dir := t.TempDir()
	procRoot, sysRoot = filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
	for pid, fs := range files {
		fd := filepath.Join(procRoot, strconv.Itoa(int(pid)), "fd")
		if err := os.MkdirAll(fd, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range append(fs, "/dev/null", fs[0]) { // others and duplicates are left out
			if err := os.Symlink(f, filepath.Join(fd, strconv.Itoa(i+3))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for pid, ppid := range parents {
		d := filepath.Join(procRoot, strconv.Itoa(int(pid)))
		_ = os.MkdirAll(d, 0o755)
		stat := strconv.Itoa(int(pid)) + " (a) b) S " + strconv.Itoa(int(ppid)) + " 1 1 0\n"
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ib := filepath.Join(sysRoot, "class/infiniband_verbs/uverbs0")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ib, "ibdev"), []byte("rxe0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return procRoot, sysRoot
}

// run feeds events to a watcher in timestamp order (through Reorder, as
// rdmatrace does), ticking at each given second, and renders the
// findings both ways.
func run(t *testing.T, w *Watcher, evs []rdma.Event, ticks []float64, found *[]rdma.Finding) {
	r := restable.NewReorder(uint64(50 * time.Millisecond))
	ti := 0
	for i := range evs {
		for ti < len(ticks) && at(ticks[ti]).Before(evs[i].Time) {
			r.FlushUntil(uint64(ticks[ti]*1e9), w.Handle)
			w.Tick(at(ticks[ti]))
			ti++
		}
		r.Push(&evs[i], w.Handle)
	}
	r.Flush(w.Handle)
	_ = found
}

// render writes the findings as NDJSON and as the human report.
func render(t *testing.T, fs []rdma.Finding) (ndjson, human []byte) {
	var j, h bytes.Buffer
	nd := formats.NewNDJSONWriter(&j)
	lw := formats.NewLeakWriter(&h)
	for i := range fs {
		if err := nd.Write(formats.FindingObject(&fs[i])); err != nil {
			t.Fatal(err)
		}
		if err := lw.Write(&fs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	return j.Bytes(), h.Bytes()
}

// TestBlockedUnregister: a stopped rping pair holds rxe0 while `rdma link
// delete` waits; the processes are killed; a kernel module's PD is never
// freed.
func TestBlockedUnregister(t *testing.T) {
	var sc script
	gsi := sc.res(0, rdma.EvExists, rdma.ResQP, 1, 0, "ib_core")
	gsi.Mono, gsi.Resource.Has = 0, gsi.Resource.Has|rdma.HasPort|rdma.HasState
	sc.res(0, rdma.EvExists, rdma.ResPD, 1, 0, "leakmod").Mono = 0
	sc.res(1, rdma.EvCreate, rdma.ResCTX, 1, 203, "rping")
	sc.res(1.1, rdma.EvCreate, rdma.ResPD, 2, 203, "rping")
	sc.res(1.2, rdma.EvCreate, rdma.ResCMID, 3, 203, "rping")
	sc.res(2, rdma.EvCreate, rdma.ResCTX, 2, 207, "rping")
	sc.res(2.1, rdma.EvCreate, rdma.ResQP, 19, 207, "rping")
	m := sc.res(2.2, rdma.EvModify, rdma.ResQP, 19, 207, "rping")
	m.SetState(uint8(rdma.QPStateRTS))
	// Two CPUs: the MR's destroy arrives before its create.
	sc.res(2.4, rdma.EvDestroy, rdma.ResMR, 8, 207, "rping")
	sc.res(2.39, rdma.EvCreate, rdma.ResMR, 8, 207, "rping")
	sc.dev(5, rdma.EvDevUnregister)
	// SIGKILL at 27 s: exit cleanup in each rping.
	for _, e := range []*rdma.Event{
		sc.res(27, rdma.EvDestroyBegin, rdma.ResQP, 19, 207, "rping"),
		sc.res(27, rdma.EvDestroy, rdma.ResQP, 19, 207, "rping"),
		sc.res(27.01, rdma.EvDestroy, rdma.ResCTX, 2, 207, "rping"),
		sc.res(27.02, rdma.EvDestroy, rdma.ResCMID, 3, 203, "rping"),
		sc.res(27.03, rdma.EvDestroy, rdma.ResPD, 2, 203, "rping"),
		sc.res(27.04, rdma.EvDestroy, rdma.ResCTX, 1, 203, "rping"),
	} {
		e.Flags |= rdma.EvActorExiting
	}
	sc.res(27.1, rdma.EvDestroy, rdma.ResQP, 1, 0, "ib_core").Resource.Has |= rdma.HasPort
	sc.evs[len(sc.evs)-1].QPType, sc.evs[len(sc.evs)-1].Port = rdma.QPTypeGSI, 1
	sc.dev(27.2, rdma.EvDevUnregistered)

	procRoot, sysRoot := fakeProc(t, map[uint32][]string{
		203: {"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"},
		207: {"/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"},
	}, nil)
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs, w.SysRoot = &proc.CommCache{Root: procRoot}, sysRoot
	run(t, w, sc.events(), []float64{6, 10.5, 15.5, 20}, &found)
	w.End(at(30))
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/unregister.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/unregister.txt", h)
	if w.Leaked() != 6 { // 5 alive at the start, 1 left at the end (the module's PD: not alive at End)
		t.Errorf("leaked %d, want 6", w.Leaked())
	}
}

// TestProgram: a program (300) and its child (301) create resources; it
// destroys some, leaves others to exit cleanup, and one outlives it.
func TestProgram(t *testing.T) {
	var sc script
	sc.res(0, rdma.EvExists, rdma.ResPD, 1, 0, "ib_core").Mono = 0
	sc.res(1, rdma.EvCreate, rdma.ResCTX, 1, 300, "leakqp")
	sc.res(1.1, rdma.EvCreate, rdma.ResPD, 2, 300, "leakqp")
	sc.res(1.2, rdma.EvCreate, rdma.ResCQ, 3, 300, "leakqp")
	sc.res(1.3, rdma.EvCreate, rdma.ResQP, 17, 300, "leakqp")
	sc.res(1.4, rdma.EvCreate, rdma.ResQP, 18, 300, "leakqp")
	sc.res(1.5, rdma.EvCreate, rdma.ResMR, 4, 301, "helper")   // a child: ours
	sc.res(1.6, rdma.EvCreate, rdma.ResMR, 5, 400, "stranger") // not ours
	sc.res(2, rdma.EvDestroy, rdma.ResQP, 18, 300, "leakqp")   // explicit
	for _, e := range []*rdma.Event{
		sc.res(3, rdma.EvDestroy, rdma.ResQP, 17, 300, "leakqp"),
		sc.res(3.01, rdma.EvDestroy, rdma.ResCQ, 3, 300, "leakqp"),
		sc.res(3.02, rdma.EvDestroy, rdma.ResPD, 2, 300, "leakqp"),
		sc.res(3.03, rdma.EvDestroy, rdma.ResCTX, 1, 300, "leakqp"), // the file's own context: no leak
	} {
		e.Flags |= rdma.EvActorExiting | rdma.EvFileClose
	}
	procRoot, sysRoot := fakeProc(t, nil, map[uint32]uint32{301: 300, 400: 1})
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs, w.SysRoot = &proc.CommCache{Root: procRoot}, sysRoot
	w.Program(300, 0)
	run(t, w, sc.events(), nil, &found)
	w.ProgramExited(at(4))
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/program.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/program.txt", h)
	if w.Leaked() != 4 { // QP 17, CQ 3, PD 2 at exit; MR 4 alive
		t.Errorf("leaked %d, want 4", w.Leaked())
	}
}

// TestCleanProgramLeaksNothing: everything destroyed explicitly.
func TestCleanProgramLeaksNothing(t *testing.T) {
	var sc script
	sc.res(1, rdma.EvCreate, rdma.ResCTX, 1, 300, "rping")
	sc.res(1.1, rdma.EvCreate, rdma.ResPD, 2, 300, "rping")
	// rdma_create_id, then rdma_resolve_addr binds the ID to rxe0: one ID.
	u := sc.res(1.15, rdma.EvCMIDCreate, rdma.ResCMID, 0, 300, "rping")
	u.Flags &^= rdma.EvHasDev
	u.Obj = 0xffff3
	sc.res(1.2, rdma.EvCreate, rdma.ResCMID, 3, 300, "rping").Obj = 0xffff3
	sc.res(2, rdma.EvDestroy, rdma.ResCMID, 3, 300, "rping")
	sc.res(2.1, rdma.EvDestroy, rdma.ResPD, 2, 300, "rping")
	sc.res(3, rdma.EvDestroy, rdma.ResCTX, 1, 300, "rping").Flags |= rdma.EvActorExiting
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Program(300, 0)
	run(t, w, sc.events(), nil, &found)
	w.ProgramExited(at(4))
	if len(found) != 0 || w.Leaked() != 0 {
		t.Errorf("a clean program: %d findings, %d leaked: %+v", len(found), w.Leaked(), found)
	}
	if c, d := w.ProgramCounts(); c != 3 || d != 3 {
		t.Errorf("a clean program: %d created, %d destroyed; want 3 and 3", c, d)
	}
}

// progCgroup is the cgroup id of the traced program in the tests below.
const progCgroup = 7001

// TestChildThatExitedAtOnceIsTheProgram's: a child of the program (301)
// creates a QP and exits before the event is handled: /proc/301 is gone,
// but the owner's cgroup in the event says it was the program's, so the
// QP its exit cleanup freed is reported (issue 10, D5: it was not).
func TestChildThatExitedAtOnceIsTheProgram(t *testing.T) {
	var sc script
	sc.res(1, rdma.EvCreate, rdma.ResCTX, 1, 301, "child")
	sc.res(1.1, rdma.EvCreate, rdma.ResQP, 17, 301, "child")
	sc.res(1.2, rdma.EvDestroy, rdma.ResQP, 17, 301, "child")
	sc.res(1.21, rdma.EvDestroy, rdma.ResCTX, 1, 301, "child") // the file's own context: no leak
	for i := range sc.evs {
		sc.evs[i].OwnerCgroup = progCgroup
	}
	sc.evs[2].Flags |= rdma.EvActorExiting | rdma.EvFileClose
	sc.evs[3].Flags |= rdma.EvActorExiting | rdma.EvFileClose
	procRoot, sysRoot := fakeProc(t, nil, map[uint32]uint32{}) // 301 already reaped
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs, w.SysRoot = &proc.CommCache{Root: procRoot}, sysRoot
	w.Program(300, progCgroup)
	run(t, w, sc.events(), nil, &found)
	w.ProgramExited(at(4))
	if w.Leaked() != 1 || len(found) != 1 || found[0].Report != rdma.LeakExitCleanup || found[0].Res.LQPN != 17 {
		t.Errorf("want the child's QP 17 freed at its exit as the one leak; leaked %d, findings %+v", w.Leaked(), found)
	}
}

// TestReusedPIDIsNotTheProgram's: 500 was a child of the program; later an
// unrelated process (another cgroup) gets PID 500 and creates a PD. Only
// the cgroup at the event counts: the stranger's PD is not the program's
// (issue 10, D5: it was blamed on the program).
func TestReusedPIDIsNotTheProgram(t *testing.T) {
	var sc script
	sc.res(1, rdma.EvCreate, rdma.ResPD, 2, 500, "child").OwnerCgroup = progCgroup
	sc.res(1.1, rdma.EvDestroy, rdma.ResPD, 2, 500, "child").OwnerCgroup = progCgroup
	sc.res(5, rdma.EvCreate, rdma.ResPD, 3, 500, "stranger").OwnerCgroup = 42 // PID reused
	procRoot, sysRoot := fakeProc(t, nil, map[uint32]uint32{500: 300})        // /proc still says 500 is the program's
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs, w.SysRoot = &proc.CommCache{Root: procRoot}, sysRoot
	w.Program(300, progCgroup)
	run(t, w, sc.events(), nil, &found)
	w.ProgramExited(at(6))
	if w.Leaked() != 0 || len(found) != 0 {
		t.Errorf("the stranger's PD was blamed on the program: leaked %d, findings %+v", w.Leaked(), found)
	}
}

// TestProgramCgroupDecidesAlone: with a cgroup, neither /proc ancestry nor
// the PID matter: the program's own PID in another cgroup (it cannot be,
// but a recording could say so) is not followed, a process in the cgroup
// that /proc does not know is.
func TestProgramCgroupDecidesAlone(t *testing.T) {
	var sc script
	sc.res(1, rdma.EvCreate, rdma.ResPD, 2, 300, "prog").OwnerCgroup = 42
	sc.res(1.1, rdma.EvCreate, rdma.ResPD, 3, 999, "grandchild").OwnerCgroup = progCgroup
	sc.res(1.2, rdma.EvCreate, rdma.ResPD, 4, 0, "ib_core") // a kernel object: no owner, cgroup 0
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs = &proc.CommCache{Root: t.TempDir()}
	w.Program(300, progCgroup)
	run(t, w, sc.events(), nil, &found)
	w.ProgramExited(at(2))
	if w.Leaked() != 1 || len(found) != 1 || found[0].Res.ID != 3 {
		t.Errorf("want only PD 3 (in the program's cgroup) alive; leaked %d, findings %+v", w.Leaked(), found)
	}
}

// TestPortBusy: the program's failed rdma_listen and bind are reported
// with who held each port (a status line: no leak, no table); a stranger's
// failure is not the program's report.
func TestPortBusy(t *testing.T) {
	busy := func(s float64, pid uint32, comm, fn, src string, holders []string) rdma.Event {
		e := rdma.Event{Kind: rdma.EvPortBusy, Time: at(s), Mono: uint64(s * 1e9), Status: -98,
			Resource: rdma.Resource{Has: rdma.HasSrcAddr | rdma.HasPS, Src: netip.MustParseAddrPort(src), PS: rdma.PSTCP}, PortBusy: rdma.PortBusy{Op: fn, Holders: holders}, Flags: rdma.EvHasOwner | rdma.EvUser}
		e.Owner = rdma.Owner{PID: pid, TID: pid, Comm: comm}
		e.Actor = e.Owner
		return e
	}
	listen := busy(1, 300, "rping", "rdma_listen", "10.99.1.1:7400", []string{"app[200] tcp LISTEN 10.99.1.1:7400"})
	listen.Type, listen.ID, listen.DevName, listen.DevIndex = rdma.ResCMID, 2, "siw0", 2
	listen.Flags |= rdma.EvHasRes | rdma.EvHasDev
	evs := []rdma.Event{
		listen,
		busy(1.2, 300, "rping", "rdma_connect", "10.99.1.1:7405", nil), // holders not looked up (a replay)
		busy(1.5, 400, "stranger", "bind", "0.0.0.0:7401", []string{"rping[301] iwarp LISTEN 10.99.1.1:7401"}),
		busy(2, 301, "rping\x1b[2J", "bind", "10.99.1.1:7402", []string{}), // a child; a hostile comm
	}
	procRoot, sysRoot := fakeProc(t, nil, map[uint32]uint32{301: 300, 400: 1})
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs, w.SysRoot = &proc.CommCache{Root: procRoot}, sysRoot
	w.Program(300, 0)
	run(t, w, evs, nil, &found)
	w.ProgramExited(at(3))
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/port-busy.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/port-busy.txt", h)
	if w.Leaked() != 0 || len(found) != 3 {
		t.Errorf("leaked %d, findings %d: want 0 leaked and the program's three port-busy findings", w.Leaked(), len(found))
	}
}

// TestSMCQPsAreNamedByTheirLink: the smc module's QPs alive when rxe0
// unregisters are named by the SMC-R link the trace saw create them (its
// link group, id and role), not only [smc]; a QP whose link was not seen
// stays [smc].
func TestSMCQPsAreNamedByTheirLink(t *testing.T) {
	sc := &script{}
	link := func(s float64, kind rdma.EventKind, lqpn, lgr uint32, role string) {
		sc.evs = append(sc.evs, &rdma.Event{Kind: kind, Resource: rdma.Resource{Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType, DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: lqpn, QPType: rdma.QPTypeRC}, Time: at(s), Mono: uint64(s * 1e9), Flags: rdma.EvHasDev,
			SMC: rdma.SMCLink{LGR: lgr, Role: role, ID: 1, State: "activating", HasLGR: true}, Actor: rdma.Owner{PID: 130, TID: 130, Comm: "e2e.test"}})
	}
	for i, q := range []uint32{17, 18, 19} {
		qp := sc.res(1+float64(i)/10, rdma.EvCreate, rdma.ResQP, q, 0, "smc")
		qp.QPType = rdma.QPTypeRC
	}
	link(1.05, rdma.EvSMCLinkCreate, 17, 0x100, "server")
	link(1.15, rdma.EvSMCLinkCreate, 18, 0x200, "client")
	link(1.25, rdma.EvSMCLinkCreate, 19, 0x300, "client")
	link(1.5, rdma.EvSMCLinkDestroy, 19, 0x300, "client") // 19's link is gone: its QP is [smc] again
	sc.dev(2, rdma.EvDevUnregister)
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	run(t, w, sc.events(), nil, &found)
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/smc.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/smc.txt", h)
	if len(found) != 3 || found[0].Res.SMC.LGR != 0x100 || found[1].Res.SMC.Role != "client" || found[2].Res.SMC.HasLGR {
		t.Errorf("findings %+v: want QPs 17 and 18 named by their links, 19 not", found)
	}
}

// consumers is a host and target of NVMe over RDMA in loopback on rxe0,
// device index 0 (the first device's): nvmet_rdma's wildcard listener was
// created before any device existed (bound to none), and ib_core made
// its child listener on rxe0 when rxe0 came; nvme_rdma's queue and
// nvmet_rdma's have a cm_id, a QP, a CQ, a PD and an MR each.
func consumers(sc *script) {
	l := &rdma.Event{Kind: rdma.EvCMIDCreate, Resource: rdma.Resource{Type: rdma.ResCMID, Owner: rdma.Owner{KernName: "nvmet_rdma"}}, Obj: 0xffff8881, Time: at(0.5), Mono: 5e8,
		Flags: rdma.EvHasRes}
	sc.evs = append(sc.evs, l)
	c := sc.res(1, rdma.EvCreate, rdma.ResCMID, 17, 0, "nvmet_rdma") // the child listener
	c.DevIndex = 0
	n := uint32(18)
	for _, mod := range []string{"nvmet_rdma", "nvme_rdma"} {
		for _, r := range []rdma.ResType{rdma.ResCMID, rdma.ResPD, rdma.ResCQ, rdma.ResQP, rdma.ResMR} {
			e := sc.res(1+float64(n)/100, rdma.EvCreate, r, n, 0, mod)
			e.DevIndex, e.QPType = 0, rdma.QPTypeRC
			n++
		}
	}
}

// frees makes the frees of cm_id and verbs objects at s, in kworker tid
// (the consumers' remove callbacks run in workqueues) or, with tid 224, in
// the unregistering task.
func frees(sc *script, s float64, tid uint32, keep func(*rdma.Event) bool) {
	var out []*rdma.Event
	for _, e := range sc.evs {
		if e.Kind != rdma.EvCreate || (keep != nil && !keep(e)) {
			continue
		}
		d := *e
		d.Kind, d.Time, d.Mono = rdma.EvDestroy, at(s), uint64(s*1e9)
		d.Actor = rdma.Owner{PID: tid, TID: tid, Comm: "kworker/u4:1"}
		if tid == 224 {
			d.Actor.Comm = "rdma"
		}
		s += 0.01
		out = append(out, &d)
	}
	sc.evs = append(sc.evs, out...)
}

// num is what the fixtures above number a resource by: its id, a QP's lqpn.
func num(e *rdma.Event) uint32 { return e.ID + e.LQPN }

func devAt(sc *script, s float64, kind rdma.EventKind) {
	sc.dev(s, kind)
	sc.evs[len(sc.evs)-1].DevIndex = 0
}

// TestCleanRemovalOfKernelConsumers: `rdma link delete rxe0` while NVMe
// over RDMA is connected through it. The consumers' remove callbacks
// free everything within a second, in kworkers and in the unregistering
// task: the report lists what was alive and sums up; nothing leaked. The
// wildcard listener, on no device, is neither on rxe0 (index 0) nor left
// by its removal: it is still alive, unbound.
func TestCleanRemovalOfKernelConsumers(t *testing.T) {
	var sc script
	consumers(&sc)
	devAt(&sc, 5, rdma.EvDevUnregister)
	frees(&sc, 5.1, 224, func(e *rdma.Event) bool { return num(e) == 17 }) // the child listener: cma_remove_one
	frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 })
	devAt(&sc, 6.2, rdma.EvDevUnregistered)
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs = &proc.CommCache{Root: t.TempDir()}
	run(t, w, sc.events(), []float64{5.5, 6}, &found)
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/consumers-clean.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/consumers-clean.txt", h)
	if w.Leaked() != 0 {
		t.Errorf("leaked %d: the consumers freed everything in time", w.Leaked())
	}
	var unreg, left int
	for _, f := range found {
		switch f.Report {
		case rdma.LeakUnregister:
			unreg++
			if !f.Res.Has(rdma.EvHasDev) {
				t.Errorf("the unbound listener is reported as on rxe0: %+v", f)
			}
		case rdma.LeakLeft:
			left++
		}
	}
	if unreg != 11 || left != 0 {
		t.Errorf("%d unregister, %d left findings; want 11 and 0", unreg, left)
	}
	if l := w.Table.Select(func(e *restable.Entry) bool { return true }); len(l) != 1 || l[0].Bound() {
		t.Errorf("alive after the removal: %d, want nvmet_rdma's unbound listener alone", len(l))
	}
}

// TestRemovalBlockedByAKernelListener: nvmet_rdma's child listener on
// rxe0 is never destroyed (its port was not removed), so the removal
// blocks in cma_remove_one. Every waiting line names the module and what
// it holds; the run ends while it is still blocked: a leak.
func TestRemovalBlockedByAKernelListener(t *testing.T) {
	var sc script
	consumers(&sc)
	devAt(&sc, 5, rdma.EvDevUnregister)
	frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 }) // the target's queue and the host's
	var found []rdma.Finding
	w := New(restable.New(100), func(f *rdma.Finding) { found = append(found, *f) })
	w.Procs = &proc.CommCache{Root: t.TempDir()}
	run(t, w, sc.events(), nil, &found)
	for _, s := range []float64{10.5, 15.5} {
		w.Tick(at(s))
	}
	w.End(at(16))
	j, h := render(t, found)
	golden.Check(t, "../../../testdata/leaks/consumers-blocked.ndjson", j)
	golden.Check(t, "../../../testdata/leaks/consumers-blocked.txt", h)
	waiting := 0
	for _, f := range found {
		if f.Report != rdma.LeakWaiting {
			continue
		}
		waiting++
		if f.Res.Owner.KernName != "nvmet_rdma" || f.Resources != 1 || len(f.Held) != 1 || f.Held[0].Res != rdma.ResCMID {
			t.Errorf("waiting line %+v: want it to name nvmet_rdma and its cm_id", f)
		}
	}
	// The child listener holding rxe0 past MaxBlocked; the wildcard
	// listener, alive at the end, is listed, not leaked.
	if waiting != 2 || w.Leaked() != 1 {
		t.Errorf("%d waiting lines, leaked %d; want 2 and 1", waiting, w.Leaked())
	}
}

// TestSlowRemovalIsALeak: the removal finishes, but the target's queue is
// freed 12 s after it began (past MaxBlocked): what it freed late held the
// device.
func TestSlowRemovalIsALeak(t *testing.T) {
	var sc script
	consumers(&sc)
	devAt(&sc, 5, rdma.EvDevUnregister)
	frees(&sc, 5.1, 224, func(e *rdma.Event) bool { return num(e) == 17 })
	frees(&sc, 5.3, 91, func(e *rdma.Event) bool { return num(e) > 17 && num(e) <= 22 })
	frees(&sc, 17, 91, func(e *rdma.Event) bool { return num(e) > 22 })
	devAt(&sc, 17.2, rdma.EvDevUnregistered)
	w := New(restable.New(100), func(*rdma.Finding) {})
	run(t, w, sc.events(), nil, nil)
	if w.Leaked() != 5 {
		t.Errorf("leaked %d, want the 5 objects freed past %v", w.Leaked(), w.MaxBlocked)
	}
}
