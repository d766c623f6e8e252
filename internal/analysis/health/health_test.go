package health

import (
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func defaults() Options {
	return Options{QPErrors: DefaultQPErrors, FailedCreates: DefaultFailedCreates, Headroom: DefaultHeadroom}
}

// healthy is an rxe node as the guest has it: rxe0/1 ACTIVE over veth0
// with 10.99.0.1, its RoCE v2 GIDs, an rdma cgroup with room left.
func healthy() *State {
	return &State{
		Ports: []Port{{Dev: "rxe0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "100 Gb/sec (4X EDR)", Gbps: 100, LinkLayer: "Ethernet", Netdev: "veth0"}},
		GIDs: []rdma.GIDEntry{
			{DevName: "rxe0", Port: 1, Index: 0, GID: netip.MustParseAddr("fe80::1"), Type: rdma.GIDTypeRoCEv1, Eth: true, Netdev: "veth0"},
			{DevName: "rxe0", Port: 1, Index: 1, GID: netip.MustParseAddr("fe80::1"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0"},
			{DevName: "rxe0", Port: 1, Index: 3, GID: netip.MustParseAddr("::ffff:10.99.0.1"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0"},
		},
		Addrs:   map[string][]netip.Addr{"veth0": {netip.MustParseAddr("10.99.0.1"), netip.MustParseAddr("fe80::1")}},
		Cgroups: []CgroupLimit{{Path: "/job1", Dev: "rxe0", Resource: "hca_object", Max: 100, Current: 50}},
	}
}

func problems(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Status == Problem || f.Status == Unknown {
			b.WriteString(f.Status.String() + " " + f.Check + ": " + f.Detail + "\n")
		}
	}
	return b.String()
}

func TestAHealthyNodeIsHealthy(t *testing.T) {
	fs := Check(healthy(), defaults())
	if v := Verdict(fs); v != OK || ExitCode(v) != 0 {
		t.Errorf("verdict %v: %s", v, problems(fs))
	}
}

// Each way a node is unfit is one line, naming what; the exit is 1.
func TestEachProblemIsALine(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(*State, *Options)
		want  string
	}{
		{"port down", func(s *State, _ *Options) { s.Ports[0].State, s.Ports[0].PhysState = "DOWN", "Disabled" },
			"problem ports: rxe0/1 is DOWN (physical state Disabled, netdev veth0)\n"},
		{"slow port", func(s *State, o *Options) { s.Ports[0].Rate, s.Ports[0].Gbps, o.Gbps = "25 Gb/sec (1X EDR)", 25, 100 },
			"problem ports: rxe0/1 runs at 25 Gb/sec (1X EDR), not the 100 Gb/s expected, netdev veth0\n"},
		{"no port", func(s *State, _ *Options) { s.Ports = nil },
			"problem ports: no RDMA port (is the driver loaded? /sys/class/infiniband lists none)\n"},
		{"address without its GID", func(s *State, _ *Options) {
			s.Addrs["veth0"] = append(s.Addrs["veth0"], netip.MustParseAddr("10.99.9.9"))
		}, "problem gids: rxe0/1: no RoCE v2 GID for 10.99.9.9 of veth0\n"},
		{"netdev without address", func(s *State, _ *Options) { s.Addrs["veth0"] = nil },
			"problem gids: rxe0/1: veth0 has no IP address, so no RoCE v2 GID: rdma_cm cannot use the port\n"},
		{"cgroup limit reached", func(s *State, _ *Options) { s.Cgroups[0].Current = 95 },
			"problem limits: rdma cgroup /job1: hca_object 95 of 100 in use on rxe0\n"},
		{"ports unreadable", func(s *State, _ *Options) { s.PortsErr = errors.New("permission denied") },
			"unknown ports: the ports could not be read: permission denied\n"},
	} {
		s, o := healthy(), defaults()
		c.spoil(s, &o)
		fs := Check(s, o)
		if got := problems(fs); got != c.want {
			t.Errorf("%s: got\n%swant\n%s", c.name, got, c.want)
		}
		want := Problem
		if strings.HasPrefix(c.want, "unknown") {
			want = OK // the other checks could tell
		}
		if v := Verdict(fs); v != want {
			t.Errorf("%s: verdict %v, want %v", c.name, v, want)
		}
	}
}

// What cannot be checked here is said, and makes the verdict "could not
// tell" only when nothing could be: a node without cgroup v2 or without
// the tracer is judged by what it has.
func TestWhatCannotBeCheckedIsSaid(t *testing.T) {
	s, o := healthy(), defaults()
	s.Cgroups, s.CgroupsSkip = nil, "no cgroup v2 hierarchy mounted"
	fs := Check(s, o)
	if v := Verdict(fs); v != OK {
		t.Errorf("no cgroup v2: verdict %v: %s", v, problems(fs))
	}
	if f := fs[len(fs)-1]; f.Check != "limits" || f.Status != Skipped || f.Detail != s.CgroupsSkip {
		t.Errorf("no cgroup v2: %+v", f)
	}
	s.GIDsErr = errors.New("permission denied")
	if fs := Check(s, o); Verdict(fs) != OK || problems(fs) != "unknown gids: the GID tables could not be read: permission denied\n" {
		t.Errorf("GIDs unreadable, ports fine: verdict %v: %s", Verdict(fs), problems(fs))
	}
	s.PortsErr = errors.New("permission denied")
	if fs := Check(s, o); Verdict(fs) != Unknown || ExitCode(Verdict(fs)) != 2 {
		t.Errorf("nothing readable: verdict %v: %s", Verdict(fs), problems(fs))
	}
	s = healthy()
	s.Cgroups = nil
	if fs := CheckCgroups(s, o); len(fs) != 1 || fs[0].Status != OK || fs[0].Detail != "no rdma cgroup limit set" {
		t.Errorf("no limit set: %+v", fs)
	}
}

func event(kind rdma.EventKind, ms int, lqpn uint32) rdma.Event {
	e := rdma.Event{Kind: kind, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	e.Type, e.DevName, e.Port, e.LQPN = rdma.ResQP, "rxe0", 1, lqpn
	e.Resource.Has |= rdma.HasLQPN | rdma.HasPort
	if kind == rdma.EvModify {
		e.SetState(uint8(rdma.QPStateErr))
	}
	return e
}

// A window of the tracer's events: a DEVICE_FATAL, a PORT_ERR, a storm of
// QP errors and one of failed creates are each a line; the moves to ERR
// of connections that ended (a disconnect follows) are none.
func TestTheWindowsEvents(t *testing.T) {
	var evs []rdma.Event
	for i := range 20 { // normal ends
		disc := event(rdma.EvCMDisconnect, 10*i+1, uint32(100+i))
		disc.Type = rdma.ResCMID
		evs = append(evs, event(rdma.EvModify, 10*i, uint32(100+i)), disc)
	}
	w := &Window{Source: "trace", Length: 10 * time.Second, Events: evs}
	s, o := healthy(), defaults()
	s.Window = w
	if fs := Check(s, o); Verdict(fs) != OK {
		t.Errorf("20 normal ends: %s", problems(fs))
	}
	port := event(rdma.EvAsync, 500, 0)
	port.Fault.IBEvent = rdma.IBEventPortErr
	fatal := event(rdma.EvAsync, 600, 0)
	fatal.Fault.IBEvent = rdma.IBEventDeviceFatal
	w.Events = append(w.Events, port, fatal)
	for i := range 10 {
		w.Events = append(w.Events, event(rdma.EvModify, 1000+i, uint32(200+i))) // nothing settles them
		cf := event(rdma.EvCallFail, 1100+i, 0)
		cf.Type = rdma.ResCQ
		cf.CallFail.Op, cf.CallFail.Errno = "create_cq", 12
		w.Events = append(w.Events, cf)
	}
	got := problems(Check(s, o))
	for _, want := range []string{
		"problem events: rxe0: a fatal event in the last 10s: DEVICE_FATAL",
		"problem events: rxe0/1: the port went down (PORT_ERR) in the last 10s\n",
		"problem events: rxe0: 10 QP errors in the last 10s (last: QP moved to ERR",
		"problem events: rxe0: 10 failed creates in the last 10s (last: create_cq",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q in\n%s", want, got)
		}
	}
}

// Without BPF, the window is the ports' states polled and the QPs in ERR:
// a flap and a device with many QPs in ERR are lines; the line that says
// all is well says what was not seen.
func TestAPolledWindow(t *testing.T) {
	s, o := healthy(), defaults()
	s.Window = &Window{Source: "netlink", Length: 5 * time.Second, Why: "no BPF: test",
		PortStates: map[string][]string{"rxe0/1": {"ACTIVE"}}, QPsInErr: map[string]int{"rxe0": 2}}
	s.Window.QPsErr = errors.New("no RDMA netlink")
	if got := problems(CheckEvents(s, o)); got != "unknown events: the QPs could not be listed (RDMA netlink): no RDMA netlink\n" {
		t.Errorf("netlink failed: %s", got)
	}
	s.Window.QPsErr = nil
	fs := CheckEvents(s, o)
	if len(fs) != 1 || fs[0].Status != OK || !strings.Contains(fs[0].Detail, "fatal events and failed creates are not seen, no BPF: test") {
		t.Errorf("quiet window: %+v", fs)
	}
	// Down all along: the ports' check says so, not the window's.
	s.Window.PortStates["rxe0/1"] = []string{"DOWN"}
	if got := problems(CheckEvents(s, o)); got != "" {
		t.Errorf("down all along: %s", got)
	}
	s.Window.PortStates["rxe0/1"] = []string{"ACTIVE", "DOWN", "ACTIVE"}
	s.Window.QPsInErr["rxe0"] = 12
	want := "problem events: rxe0/1: the port went through ACTIVE → DOWN → ACTIVE in the last 5s\n" +
		"problem events: rxe0: 12 QPs in ERR (RDMA netlink, at the end of 5s)\n"
	if got := problems(CheckEvents(s, o)); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"100 Gb/sec (4X EDR)": 100, "2.5 Gb/sec (1X SDR)": 2.5, "": 0, "fast": 0, "-1 Gb/sec": 0} {
		if got := ParseRate(in); got != want {
			t.Errorf("ParseRate(%q) = %g, want %g", in, got, want)
		}
	}
}

// Gather over a sysfs and cgroup tree: the port, its netdev, its GIDs and
// a limited cgroup.
func TestGather(t *testing.T) {
	root := t.TempDir()
	put := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := "sys/class/infiniband/rxe0/ports/1/"
	put(port+"state", "1: DOWN\n")
	put(port+"phys_state", "3: Disabled\n")
	put(port+"rate", "10 Gb/sec (1X QDR)\n")
	put(port+"link_layer", "Ethernet\n")
	put(port+"gid_attrs/ndevs/0", "veth0\n")
	put(port+"gid_attrs/ndevs/1", "veth0\n")
	put(port+"gid_attrs/types/0", "IB/RoCE v1\n")
	put(port+"gid_attrs/types/1", "RoCE v2\n")
	put(port+"gids/0", "fe80:0000:0000:0000:0000:0000:0000:0001\n")
	put(port+"gids/1", "0000:0000:0000:0000:0000:ffff:0a63:0001\n")
	put("sys/fs/cgroup/cgroup.controllers", "cpu rdma\n")
	put("sys/fs/cgroup/job1/rdma.max", "rxe0 hca_handle=max hca_object=8\n")
	put("sys/fs/cgroup/job1/rdma.current", "rxe0 hca_handle=1 hca_object=8\n")
	h := Host{Root: root, Addrs: func(nd string) ([]netip.Addr, error) {
		if nd != "veth0" {
			return nil, errors.New("no such netdev")
		}
		return []netip.Addr{netip.MustParseAddr("10.99.0.1")}, nil
	}}
	s := h.Gather("")
	want := Port{Dev: "rxe0", Port: 1, State: "DOWN", PhysState: "Disabled", Rate: "10 Gb/sec (1X QDR)", Gbps: 10, LinkLayer: "Ethernet", Netdev: "veth0"}
	if s.PortsErr != nil || len(s.Ports) != 1 || s.Ports[0] != want {
		t.Errorf("ports %+v (%v), want %+v", s.Ports, s.PortsErr, want)
	}
	got := problems(Check(s, defaults()))
	wantLines := "problem ports: rxe0/1 is DOWN (physical state Disabled, netdev veth0)\n" +
		"problem limits: rdma cgroup /job1: hca_object 8 of 8 in use on rxe0\n"
	if got != wantLines {
		t.Errorf("got\n%swant\n%s", got, wantLines)
	}
	// No device at all: one line, no GID line besides.
	s = Host{Root: t.TempDir()}.Gather("")
	if got := problems(Check(s, defaults())); got != "problem ports: no RDMA port (is the driver loaded? /sys/class/infiniband lists none)\n" {
		t.Errorf("no device: %s", got)
	}
}

// The cgroup tree says why it cannot limit anything: no cgroup v2, or
// one without the rdma controller.
func TestReadCgroupsSaysWhyNot(t *testing.T) {
	root := t.TempDir()
	if _, skip, err := (Host{Root: root, Cgroup: "-"}).ReadCgroups(); err != nil || skip != "no cgroup v2 hierarchy mounted" {
		t.Errorf("no cgroup v2: %q, %v", skip, err)
	}
	if _, skip, err := (Host{Root: root}).ReadCgroups(); err != nil || skip != "no cgroup v2 hierarchy mounted (/sys/fs/cgroup has no cgroup.controllers)" {
		t.Errorf("no cgroup v2 at /sys/fs/cgroup: %q, %v", skip, err)
	}
	dir := filepath.Join(root, "sys/fs/cgroup")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, skip, err := (Host{Root: root}).ReadCgroups(); err != nil || !strings.HasPrefix(skip, "cgroup v2 has no rdma controller") {
		t.Errorf("no rdma controller: %q, %v", skip, err)
	}
}

// The sysfs texts a port's files hold are read whatever their bytes: a
// speed is a finite number of 0 or more, a state has no colon before it.
func FuzzSysfsPortText(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "4: ACTIVE", "1: DOWN", "NaN Gb/sec", "Inf Gb/sec", "1e400 Gb/sec", ":", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g := ParseRate(s); g < 0 || math.IsNaN(g) || math.IsInf(g, 0) {
			t.Errorf("ParseRate(%q) = %g", s, g)
		}
		if st := afterColon(s); len(st) > len(s) {
			t.Errorf("afterColon(%q) = %q", s, st)
		}
	})
}
