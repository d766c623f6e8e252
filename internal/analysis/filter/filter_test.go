package filter

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func qp(dev string, port uint32, lqpn uint32, typ rdma.QPType, state rdma.QPState, pid uint32) rdma.Resource {
	r := rdma.Resource{Type: rdma.ResQP, DevName: dev, LQPN: lqpn, QPType: typ, QPState: state,
		Has: rdma.HasLQPN | rdma.HasQPType | rdma.HasState}
	if port != 0 {
		r.Port, r.Has = port, r.Has|rdma.HasPort
	}
	if pid != 0 {
		r.Owner.PID, r.Has = pid, r.Has|rdma.HasPID
	} else {
		r.Owner.KernName = "ib_core"
	}
	return r
}

func TestFilterMatchesLikeIproute2(t *testing.T) {
	gsi := qp("rxe0", 1, 1, rdma.QPTypeGSI, rdma.QPStateRTS, 0)
	rc := qp("rxe0", 1, 17, rdma.QPTypeRC, rdma.QPStateRTS, 1234)
	reset := qp("rxe0", 0, 18, rdma.QPTypeRC, rdma.QPStateReset, 1234)
	other := qp("rxe1", 1, 17, rdma.QPTypeUD, rdma.QPStateInit, 99)
	all := []rdma.Resource{gsi, rc, reset, other}
	for _, tc := range []struct {
		expr string
		want []uint32 // lqpns of matches, in order
		devs string
	}{
		{"", []uint32{1, 17, 18, 17}, "rxe0 rxe0 rxe0 rxe1"},
		{"pid 1234", []uint32{17, 18}, ""},
		{"pid 1-100", []uint32{17}, "rxe1"},
		{"type RC", []uint32{17, 18}, ""},
		{"type rc,ud", []uint32{17, 18, 17}, ""},
		{"state RTS pid 1234", []uint32{17}, ""},
		{"lqpn 2-17,18", []uint32{17, 18, 17}, ""},
		{"link rxe0/1", []uint32{1, 17}, ""},
		{"link rxe0/-", []uint32{18}, ""},
		{"link rxe1", []uint32{17}, "rxe1"},
		{"comm ib_core", []uint32{1}, ""},
		{"lqpn 017", []uint32{17, 17}, ""},  // decimal, as iproute2's strtol(..., 10)
		{"lqpn 0x11", []uint32{17, 17}, ""}, // hex, as rkey and lkey are printed
		{"lqpn 0x1-0X11", []uint32{1, 17, 17}, ""},
	} {
		f, err := Parse(rdma.ResQP, tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		var got []uint32
		var devs []string
		for i := range all {
			if f.Match(&all[i]) {
				got = append(got, all[i].LQPN)
				devs = append(devs, all[i].DevName)
			}
		}
		if !equal(got, tc.want) {
			t.Errorf("%q matched lqpns %v, want %v", tc.expr, got, tc.want)
		}
		if tc.devs != "" && strings.Join(devs, " ") != tc.devs {
			t.Errorf("%q matched devices %v, want %s", tc.expr, devs, tc.devs)
		}
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFilterOnCMIDAddresses(t *testing.T) {
	r := rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0", Has: rdma.HasSrcAddr | rdma.HasDstAddr | rdma.HasPS | rdma.HasState,
		Src: netip.MustParseAddrPort("10.99.0.1:7174"), Dst: netip.MustParseAddrPort("[::ffff:10.99.0.1]:40000"),
		PS: rdma.PSIB, CMState: rdma.CMListen}
	for expr, want := range map[string]bool{
		"src-addr 10.99.0.1":             true,
		"src-addr 10.99.0.2":             false,
		"src-port 7174":                  true,
		"dst-addr ::FFFF:10.99.0.1":      true,
		"dst-port 1-39999":               false,
		"ps IB state listen":             true,
		"ps TCP":                         false,
		"state LISTEN,CONNECT ps ib,tcp": true,
	} {
		f, err := Parse(rdma.ResCMID, expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		if got := f.Match(&r); got != want {
			t.Errorf("%q: Match = %v, want %v", expr, got, want)
		}
	}
}

func TestNumericFilterOnAbsentAttributeDoesNotMatch(t *testing.T) {
	kernel := qp("rxe0", 1, 1, rdma.QPTypeGSI, rdma.QPStateRTS, 0)
	f, _ := Parse(rdma.ResQP, "pid 0-1000000")
	if f.Match(&kernel) {
		t.Error("a pid filter matched a kernel QP that has no pid")
	}
}

func TestSRQFilterByAnyAttachedQP(t *testing.T) {
	r := rdma.Resource{Type: rdma.ResSRQ, SRQN: 1, Has: rdma.HasSRQN, QPs: []rdma.QPRange{{Min: 5, Max: 5}, {Min: 10, Max: 20}}}
	for expr, want := range map[string]bool{"lqpn 5": true, "lqpn 15": true, "lqpn 6-9": false, "lqpn 21,1-4": false} {
		f, err := Parse(rdma.ResSRQ, expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(&r); got != want {
			t.Errorf("%q: Match = %v, want %v", expr, got, want)
		}
	}
}

func TestBadFiltersNameTheValidChoices(t *testing.T) {
	for _, tc := range []struct {
		typ  rdma.ResType
		expr string
		want []string
	}{
		{rdma.ResQP, "colour red", []string{`unknown qp filter "colour"`, "lqpn", "state", "type"}},
		{rdma.ResQP, "state RUNNING", []string{`unknown QP state "RUNNING"`, "RESET, INIT, RTR, RTS"}},
		{rdma.ResCMID, "ps SDP", []string{`unknown port space "SDP"`, "TCP, UDP, IB, IPoIB"}},
		{rdma.ResCQ, "poll-ctx FAST", []string{"SOFTIRQ, WORKQUEUE"}},
		{rdma.ResQP, "pid", []string{`filter "pid" has no value`}},
		{rdma.ResQP, "lqpn 9-3", []string{"bad range"}},
		{rdma.ResQP, "lqpn x", []string{"bad number"}},
		{rdma.ResQP, "link /1", []string{"bad link"}},
		{rdma.ResCMID, "src-addr 10.0.0", []string{"bad address"}},
		{rdma.ResMR, "lqpn 1", []string{"valid filters are cgroup, comm, container, dev, job, lkey, mrlen, mrn, pdn, pid, pod, rkey"}},
	} {
		_, err := Parse(tc.typ, tc.expr)
		if err == nil {
			t.Errorf("Parse(%s, %q) succeeded, want an error", tc.typ, tc.expr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%s, %q) = %q, want it to mention %q", tc.typ, tc.expr, err, w)
			}
		}
	}
}

type threads map[uint32]uint32

func (t threads) TGID(tid uint32) uint32 { return t[tid] }

// pid selects a process as procps' and lsof's -p do: RDMA netlink names
// the creating thread, and an rping client's threads (272, 273 of 266)
// create its PD and context. With SelectProcesses, pid 266 selects them;
// a thread's own pid still selects its objects, and the objects keep it.
// Traced events carry the process and the thread: pid selects either.
func TestPIDSelectsTheProcessOfEveryThread(t *testing.T) {
	pd := func(id, pid uint32) rdma.Resource {
		return rdma.Resource{Type: rdma.ResPD, DevName: "rxe0", Owner: rdma.Owner{PID: pid}, Has: rdma.HasPID | rdma.HasPDN, PDN: id}
	}
	objs := []rdma.Resource{pd(1, 266), pd(2, 272), pd(3, 273), pd(4, 999), {Type: rdma.ResPD, Owner: rdma.Owner{KernName: "ib_core"}}}
	procs := threads{266: 266, 272: 266, 273: 266, 999: 999}
	sel := func(expr string, p Processes) (got []uint32) {
		f, err := Parse(rdma.ResPD, expr)
		if err != nil {
			t.Fatal(err)
		}
		f.SelectProcesses(p)
		for i := range objs {
			if f.Match(&objs[i]) {
				got = append(got, objs[i].PDN)
			}
		}
		return got
	}
	for _, c := range []struct {
		expr string
		p    Processes
		want string
	}{
		{"pid 266", nil, "[1]"}, // iproute2's: the kernel's pid alone
		{"pid 266", procs, "[1 2 3]"},
		{"pid 272", procs, "[2]"},
		{"pid 1-300", procs, "[1 2 3]"},
		{"pid 266 pdn 2,4", procs, "[2]"},
		{"pid 5", procs, "[]"},
	} {
		if got := fmt.Sprint(sel(c.expr, c.p)); got != c.want {
			t.Errorf("%q (processes %v): PDs %s, want %s", c.expr, c.p != nil, got, c.want)
		}
	}
	if objs[1].Owner.PID != 272 {
		t.Errorf("the object's pid became %d: it keeps its thread's", objs[1].Owner.PID)
	}
	ev := rdma.Event{Flags: rdma.EvHasOwner}
	ev.Owner = rdma.Owner{PID: 266, TID: 272}
	for _, pid := range []string{"266", "272"} {
		f, err := ParseEvents([]string{"pid", pid})
		if err != nil {
			t.Fatal(err)
		}
		if !f.Match(&ev) {
			t.Errorf("trace's pid %s does not select an event of thread 272 of process 266", pid)
		}
	}
}

// A saved dump's filter: cm_ids by cm_id's keys, QPs by qp's where the
// words are valid for QPs, none where they are not (ps is no qp key).
func TestParseSavedFiltersEachTypeByItsOwnKeys(t *testing.T) {
	cm := &rdma.Resource{Type: rdma.ResCMID, Has: rdma.HasPID, Owner: rdma.Owner{PID: 5}}
	qp := &rdma.Resource{Type: rdma.ResQP, Has: rdma.HasPID, Owner: rdma.Owner{PID: 5}}
	other := &rdma.Resource{Type: rdma.ResCMID, Has: rdma.HasPID, Owner: rdma.Owner{PID: 6}}
	keep, err := ParseSaved([]string{"pid", "5"})
	if err != nil {
		t.Fatal(err)
	}
	if !keep(cm) || !keep(qp) || keep(other) {
		t.Errorf("pid 5: cm_id %v, qp %v, pid 6 %v; want true, true, false", keep(cm), keep(qp), keep(other))
	}
	if keep, err = ParseSaved([]string{"ps", "TCP"}); err != nil {
		t.Fatal(err)
	}
	if keep(qp) {
		t.Error("ps TCP kept a QP: a QP has no port space")
	}
	if _, err := ParseSaved([]string{"nosuchkey", "1"}); err == nil || !strings.HasPrefix(err.Error(), "filter: ") {
		t.Errorf("unknown key: %v, want a filter error", err)
	}
	if keep, _ := ParseSaved(nil); !keep(other) {
		t.Error("no words dropped a record")
	}
}
