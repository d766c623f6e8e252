package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// snapshot is rxe0 with a kernel GSI QP, two rping processes (one in a
// container) and five ib_write_bw QPs, so that with topN 2 the rest is
// summed as "other".
// fixed is a Source of s.
func fixed(s rdma.NodeState) Source {
	return func(context.Context, func(*rdma.Resource)) rdma.NodeState { return s }
}

// gatherer is what a scrape of x and reg serves.
func gatherer(x *Exporter, reg prometheus.Gatherer) prometheus.Gatherer {
	return x.Gatherer(reg)(context.Background())
}

func snapshot() rdma.NodeState {
	qp := func(comm string, pid uint32, st rdma.QPState, place *rdma.Placement) rdma.Resource {
		return rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", QPState: st, Has: rdma.HasState | rdma.HasPID,
			Owner: rdma.Owner{PID: pid, Comm: comm, Place: place}}
	}
	pod := &rdma.Placement{ContainerID: "4f3c2b1a0e9d", Runtime: "containerd"}
	s := rdma.NodeState{
		Devices: []rdma.Device{{Index: 1, Name: "rxe0"}},
		Ports:   []rdma.Port{{DevName: "rxe0", Port: 1, State: rdma.PortState(4)}},
		Stats:   []rdma.PortStats{{DevName: "rxe0", Port: 1, Counters: []rdma.Counter{{Name: "sent_pkts", Value: 124}, {Name: "rcvd_pkts", Value: 120}}}},
	}
	s.Resources = append(s.Resources,
		rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", QPState: rdma.QPStateRTS, Has: rdma.HasState, Owner: rdma.Owner{KernName: "ib_core"}},
		qp("rping", 100, rdma.QPStateRTS, nil), qp("rping", 200, rdma.QPStateRTS, pod),
		rdma.Resource{Type: rdma.ResPD, DevName: "rxe0", Owner: rdma.Owner{PID: 100, Comm: "rping"}})
	for i := 0; i < 5; i++ {
		s.Resources = append(s.Resources, qp("ib_write_bw", 300, rdma.QPStateRTR, nil))
	}
	return s
}

func TestScrapeGoldenAndLint(t *testing.T) {
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return snapshot() }, 2)
	x.sysfs = fixtureSysfs
	reg := prometheus.NewPedanticRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ev := func(kind rdma.EventKind, res rdma.ResType, obj uint64, at time.Duration) *rdma.Event {
		return &rdma.Event{Kind: kind, Resource: rdma.Resource{Type: res, DevName: "rxe0"}, Obj: obj, Time: t0.Add(at), Flags: rdma.EvHasRes | rdma.EvHasDev}
	}
	x.Event(ev(rdma.EvCreate, rdma.ResCMID, 0xa, 0))
	x.Event(ev(rdma.EvCreate, rdma.ResQP, 0xb, 2*time.Millisecond))
	m := ev(rdma.EvModify, rdma.ResQP, 0xb, 3*time.Millisecond)
	m.SetState(uint8(rdma.QPStateErr))
	x.Event(m)
	est := ev(rdma.EvCMEventHandler, rdma.ResCMID, 0xa, 12*time.Millisecond)
	est.CMEvent, est.Flags = rdma.CMEvent(9), est.Flags|rdma.EvHasCM // ESTABLISHED
	x.Event(est)
	// An active side whose QP user space owns: CONNECT_RESPONSE ends its
	// setup in the kernel, and counts once.
	x.Event(ev(rdma.EvCreate, rdma.ResCMID, 0xe, 0))
	resp := ev(rdma.EvCMEventHandler, rdma.ResCMID, 0xe, 20*time.Millisecond)
	resp.CMEvent, resp.Flags = rdma.CMEvent(5), resp.Flags|rdma.EvHasCM // CONNECT_RESPONSE
	x.Event(resp)
	x.Event(resp)
	rej := ev(rdma.EvCMEventHandler, rdma.ResCMID, 0xc, 13*time.Millisecond)
	rej.CMEvent, rej.Status, rej.Flags = rdma.CMEvent(8), 28, rej.Flags|rdma.EvHasCM // REJECTED, consumer defined
	x.Event(rej)
	done := *rej
	done.Kind = rdma.EvCMEventDone
	x.Event(&done) // the same event again: not counted twice
	x.Event(ev(rdma.EvDestroy, rdma.ResQP, 0xb, 1500*time.Millisecond))
	left := ev(rdma.EvDestroy, rdma.ResMR, 0xd, 1600*time.Millisecond)
	left.Flags |= rdma.EvActorExiting // freed by the kernel at its owner's exit
	x.Event(left)
	// What rxe1's users hold when its unregistration begins: a PD that
	// existed at start and a QP of a process in a container, a kernel CQ.
	leakqp := rdma.Owner{PID: 300, TID: 300, Comm: "leakqp", Place: &rdma.Placement{ContainerID: "c0ffee"}}
	on1 := func(kind rdma.EventKind, res rdma.ResType, id uint32, o rdma.Owner) *rdma.Event {
		e := &rdma.Event{Kind: kind, Resource: rdma.Resource{Has: rdma.HasLQPN | rdma.HasQPType, Type: res, DevName: "rxe1", DevIndex: 2, LQPN: id, Owner: o}, ID: id, Time: t0, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
		return e
	}
	x.Event(on1(rdma.EvExists, rdma.ResPD, 1, leakqp))
	x.Event(on1(rdma.EvCreate, rdma.ResQP, 17, leakqp))
	x.Event(on1(rdma.EvCreate, rdma.ResCQ, 1, rdma.Owner{KernName: "ib_core"}))
	un := &rdma.Event{Kind: rdma.EvDevUnregister, Resource: rdma.Resource{DevName: "rxe1", DevIndex: 2}, Time: t0, Flags: rdma.EvHasDev, Actor: rdma.Owner{PID: 224, Comm: "rdma"}}
	x.Event(un)
	x.now = func() time.Time { return t0.Add(42 * time.Second) }

	if est.CMEvent.String() != "ESTABLISHED" || rej.CMEvent.String() != "REJECTED" || resp.CMEvent.String() != "CONNECT_RESPONSE" {
		t.Fatalf("CM event numbers: %s, %s, %s", est.CMEvent, rej.CMEvent, resp.CMEvent)
	}
	problems, err := testutil.GatherAndLint(gatherer(x, reg))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := gatherer(x, reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, "../../../testdata/exporter/scrape.prom", out.Bytes())
	for _, want := range []string{
		`rdma_resources_by_owner{container="",device="rxe0",owner="other",type="qp"} 2`,
		`rdma_cm_events_total{event="REJECTED",status="consumer defined"} 1`,
		`rdma_cm_connection_setup_seconds_count{device="rxe0"} 2`,
		`rdma_qp_lifetime_seconds_count{device="rxe0"} 1`,
		`rdma_port_transmit_packets_total{device="rxe0",port="1"} 124`,
		`rdma_qp_transitions_total{device="rxe0",state="ERR"} 1`,
		`rdma_device_unregister_blocked_seconds{by="rdma",device="rxe1"} 42`,
		`rdma_device_unregister_holders{container="c0ffee",device="rxe1",owner="leakqp"} 2`,
		`rdma_device_unregister_holders{container="",device="rxe1",owner="[ib_core]"} 1`,
		`rdma_resources_freed_at_exit_total{device="rxe0",type="mr"} 1`,
		`rdma_failures_total{comm="other",container="",device="rxe0",event="QP_ERR",port="",uid=""} 1`,
		`rdma_failures_total{comm="other",container="",device="rxe0",event="REJECTED",port="",uid=""} 1`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	x.Event(&rdma.Event{Kind: rdma.EvDevUnregistered, Resource: rdma.Resource{DevName: "rxe1"}, Time: t0.Add(43 * time.Second), Flags: rdma.EvHasDev})
	if n := testutil.CollectAndCount(x, "rdma_device_unregister_blocked_seconds", "rdma_device_unregister_holders"); n != 0 {
		t.Errorf("%d blocked-unregister series after the device was unregistered, want 0", n)
	}
}

// A type the kernel cannot dump has no series; the others are 0 when empty.
func TestUnknownTypesHaveNoSeries(t *testing.T) {
	s := snapshot()
	s.Unknown = []rdma.ResType{rdma.ResCTX, rdma.ResSRQ} // Linux 5.10
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return s }, 2)
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := gatherer(x, reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "rdma_resources" {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "type" {
					types[l.GetValue()] = true
				}
			}
		}
	}
	if types["ctx"] || types["srq"] || !types["mr"] || !types["cq"] {
		t.Errorf("rdma_resources types %v: want no ctx or srq, and mr and cq at 0", types)
	}
}

// Each part a scrape reads has its success gauge; a part's first error is
// logged (sanitized) and its recovery too, not every scrape's.
func TestScrapeCollectorSuccessAndWhyLogged(t *testing.T) {
	var errs []error
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { s := snapshot(); s.Errors = errs; return s }, 2)
	var log bytes.Buffer
	x.LogTo(ratelog.New(&log, 0))
	reg := prometheus.NewRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	success := func() map[string]float64 {
		t.Helper()
		mfs, err := gatherer(x, reg).Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "rdmatrace_scrape_collector_success" {
				for _, m := range mf.Metric {
					got[m.Label[0].GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
		if len(got) != len(rdma.NodeParts)+1 { // and sysfs_port_counters
			t.Errorf("%d success series, want one per part: %v", len(got), got)
		}
		return got
	}
	if s := success(); s["ports"] != 1 || s["resources_qp"] != 1 || s["netlink"] != 1 {
		t.Errorf("all read: %v", s)
	}
	for i := range 3 { // the same failure, scrape after scrape
		errs = []error{&rdma.PartError{Part: "ports", Err: fmt.Errorf("netlink receive: operation not permitted (seq %d)\x1b[31m", i)}}
		if s := success(); s["ports"] != 0 || s["devices"] != 1 {
			t.Errorf("ports failing: %v", s)
		}
	}
	errs = nil
	success()
	success()
	errs = []error{errors.New("dial netlink: protocol not supported")}
	if s := success(); s["netlink"] != 0 || s["devices"] != 0 || s["resources_mr"] != 0 {
		t.Errorf("no netlink: %v, want every part 0", s)
	}
	want := `rdmatrace: scrape: cannot read ports: netlink receive: operation not permitted (seq 0)\x1b[31m (served without it; logged again when this changes)
rdmatrace: scrape: ports read again
rdmatrace: scrape: cannot read netlink: dial netlink: protocol not supported (served without it; logged again when this changes)
`
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
	if v := testutil.ToFloat64(x.scrapeErrors); v != 4 {
		t.Errorf("rdmatrace_scrape_errors_total %v, want 4", v)
	}
}

// rdma_failures_total counts what Event.Failure reports, once per event,
// under the owner (from the live table when the event names none), the
// first topN owners by name and the rest as "other".
func TestFailuresAreCountedByOwnerWithinTheBound(t *testing.T) {
	x := New(func(context.Context, func(*rdma.Resource)) rdma.NodeState { return rdma.NodeState{} }, 2)
	reg := prometheus.NewPedanticRegistry()
	if err := x.Register(reg); err != nil {
		t.Fatal(err)
	}
	owner := func(comm string, pid uint32, container string) rdma.Owner {
		o := rdma.Owner{PID: pid, TID: pid, Comm: comm}
		if container != "" {
			o.Place = &rdma.Placement{ContainerID: container}
		}
		return o
	}
	rejected := func(o rdma.Owner) *rdma.Event {
		e := &rdma.Event{Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM | rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner,
			CMEvent: rdma.CMRejected, Status: 8, Resource: rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0", Port: 1, Has: rdma.HasPort, Owner: o}}
		return e
	}
	x.Event(rejected(owner("rping", 10, "")))
	x.Event(rejected(owner("rping", 10, "")))
	x.Event(rejected(owner("app", 20, "c0ffee")))
	x.Event(rejected(owner("third", 30, ""))) // past topN: other
	done := rejected(owner("rping", 10, ""))
	done.Kind = rdma.EvCMEventDone // the same event again
	x.Event(done)
	// A QP made by app, then moved to ERR by a kworker: app's.
	qp := &rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", DevIndex: 1, LQPN: 17, Has: rdma.HasLQPN, Owner: owner("app", 20, "c0ffee")}}
	x.Event(qp)
	toErr := &rdma.Event{Kind: rdma.EvModify, Flags: rdma.EvHasRes | rdma.EvHasDev, Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", DevIndex: 1, LQPN: 17, Has: rdma.HasLQPN}}
	toErr.SetState(uint8(rdma.QPStateErr))
	x.Event(toErr)
	x.Event(&rdma.Event{Kind: rdma.EvPortBusy, PortBusy: rdma.PortBusy{Op: "rdma_listen"}, Flags: rdma.EvHasOwner, Resource: rdma.Resource{Owner: owner("rping", 10, "")}})
	want := `# HELP rdma_failures_total Failures the tracer saw (rdma_cm errors, QPs moved to ERR or SQE, ports taken, refused destroys, SMC fallbacks and link failures), by device, port, failure and owner: the owners with most failures lately (halved every 10 minutes; a user takes at most half of them) by name and uid, the rest as comm="other".
# TYPE rdma_failures_total counter
rdma_failures_total{comm="app",container="c0ffee",device="rxe0",event="QP_ERR",port="",uid=""} 1
rdma_failures_total{comm="app",container="c0ffee",device="rxe0",event="REJECTED",port="1",uid=""} 1
rdma_failures_total{comm="other",container="",device="rxe0",event="REJECTED",port="1",uid=""} 1
rdma_failures_total{comm="rping",container="",device="",event="port-busy",port="",uid=""} 1
rdma_failures_total{comm="rping",container="",device="rxe0",event="REJECTED",port="1",uid=""} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rdma_failures_total"); err != nil {
		t.Error(err)
	}
}
