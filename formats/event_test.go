package formats

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A CM status is named in both views: the IB CM reject reason for
// REJECTED (as rdma_reject_msg says it), the errno's name otherwise, and
// nothing when it is 0.
func TestCMStatusIsNamedInBothViews(t *testing.T) {
	ev := func(cm rdma.CMEvent, status int32) *rdma.Event {
		return &rdma.Event{Time: time.Unix(0, 0), Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM | rdma.EvHasRes,
			Resource: rdma.Resource{Type: rdma.ResCMID}, CMEvent: cm, Status: status}
	}
	for _, tc := range []struct {
		e         *rdma.Event
		line, key string // key: the JSON's status-name, "" for none
	}{
		{ev(rdma.CMRejected, 28), "event=REJECTED status=28 (consumer defined)", `"status":28,"status-name":"consumer defined"`},
		{ev(1, -110), "event=ADDR_ERROR status=ETIMEDOUT", `"status":-110,"status-name":"ETIMEDOUT"`},
		{ev(9, 0), "event=ESTABLISHED", `"status":0}`},
		{&rdma.Event{Time: time.Unix(0, 0), Kind: rdma.EvCMQPCreate, Status: -12}, "status=ENOMEM", `"status":-12,"status-name":"ENOMEM"`},
	} {
		line := EventLine(tc.e)
		js := string(AppendJSON(nil, EventObject(tc.e)))
		if !strings.Contains(line, tc.line) || !strings.Contains(js, tc.key) {
			t.Errorf("event %s status %d:\n line %q, want %q in it\n JSON %s, want %s in it", tc.e.CMEvent, tc.e.Status, line, tc.line, js, tc.key)
		}
		if tc.e.Status == 0 && (strings.Contains(line, "status") || strings.Contains(js, "status-name")) {
			t.Errorf("status 0 shown: %q %s", line, js)
		}
	}
}
func sampleEvents() []rdma.Event {
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC)
	owner := rdma.Owner{PID: 812, TID: 812, Comm: "rp\x1bing"}
	return []rdma.Event{
		{Time: at, Kind: rdma.EvCreate, Resource: rdma.Resource{Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType, Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 17, QPType: rdma.QPTypeRC, Owner: owner}, Actor: owner, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser},
		{Time: at, Kind: rdma.EvCMEventHandler, Resource: rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0", Src: netip.MustParseAddrPort("[fe80::1%2]:4791"), Dst: netip.MustParseAddrPort("192.0.2.1:7174"), Owner: rdma.Owner{KernName: "nvme_rdma"}, Has: rdma.HasSrcAddr | rdma.HasPS}, CMEvent: rdma.CMEvent(5), Status: -110,
			Actor: rdma.Owner{PID: 9, TID: 9, Comm: "kworker"},
			Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasCM | rdma.EvActorExiting},
		{Time: at, Kind: rdma.EvDevUnregistered, Resource: rdma.Resource{DevName: "rxe\u202e0"}, Flags: rdma.EvHasDev},
	}
}

// The writer trace uses gives what EventLine and EventObject give, a line
// each, whatever it wrote before.
func TestEventWriterWritesWhatEventLineAndEventObjectSay(t *testing.T) {
	for _, json := range []bool{false, true} {
		var got, want bytes.Buffer
		w := NewEventWriter(&got, json)
		if !json {
			want.WriteString(EventHeader(StampAbsolute) + "\n")
		}
		for _, e := range sampleEvents() {
			if err := w.Write(&e); err != nil {
				t.Fatal(err)
			}
			if json {
				want.Write(AppendJSON(nil, EventObject(&e)))
			} else {
				want.WriteString(EventLine(&e))
			}
			want.WriteByte('\n')
		}
		if err := w.Close(); err != nil { // the held cm_event_handler too
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("json=%v:\n%s\nwant\n%s", json, got.String(), want.String())
		}
		if strings.ContainsAny(got.String(), "\x1b\u202e") {
			t.Errorf("json=%v: raw control characters in %q", json, got.String())
		}
	}
}

// The human view's columns are fixed: the owner starts under the header's
// OWNER whatever the detail (a long one used to push it right), and the
// detail under DETAIL.
func TestEventLineHasFixedColumns(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	evs := sampleEvents()
	header := EventHeader(StampAbsolute)
	if want := "TIME            EVENT             RES     DEV        OWNER                    DETAIL"; header != want {
		t.Errorf("header\n got %q\nwant %q", header, want)
	}
	owner, detail := strings.Index(header, "OWNER"), strings.Index(header, "DETAIL")
	for i, want := range []string{
		`10:00:00.123456 create            qp      rxe0/1     rp\x1bing[812]           lqpn=17 type=RC`,
		`10:00:00.123456 cm_event_handler  cm_id   rxe0       [nvme_rdma]              event=CONNECT_RESPONSE status=ETIMEDOUT: the connection to 192.0.2.1:7174 failed: ETIMEDOUT from rxe0; src=fe80::1%2:4791 dst=192.0.2.1:7174 by=kworker[9] cleanup=exit`,
		`10:00:00.123456 dev_unregistered          rxe\u202e0 -`,
	} {
		got := EventLine(&evs[i])
		if got != want {
			t.Errorf("event %d:\n got %q\nwant %q", i, got, want)
		}
		if len(got) > owner && (got[owner-1] != ' ' || got[owner] == ' ') {
			t.Errorf("event %d: the owner does not start at column %d: %q", i, owner, got)
		}
		if len(got) > detail && (got[detail-1] != ' ' || got[detail] == ' ') {
			t.Errorf("event %d: the detail does not start at column %d: %q", i, detail, got)
		}
	}
}

// Without an address or a name to escape, writing an event allocates
// nothing.
func TestEventWriterDoesNotAllocate(t *testing.T) {
	e := sampleEvents()[0]
	e.Owner.Comm, e.Actor.Comm = "rping", "rping"
	for _, json := range []bool{false, true} {
		w := NewEventWriter(discard{}, json)
		if n := testing.AllocsPerRun(100, func() { _ = w.Write(&e) }); n != 0 {
			t.Errorf("json=%v: %v allocations per event", json, n)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// --timestamp: each way of timing a line, relative to the first event.
func TestEventStampsGolden(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 14, 3, 7, 123456000, time.Local)
	evs := []rdma.Event{
		{Time: t0, Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResPD, DevName: "rxe0"}, ID: 3, Flags: rdma.EvHasRes | rdma.EvHasDev},
		{Time: t0.Add(2001234 * time.Microsecond), Kind: rdma.EvDestroy, Resource: rdma.Resource{Type: rdma.ResPD, DevName: "rxe0"}, ID: 3, Flags: rdma.EvHasRes | rdma.EvHasDev},
	}
	var out bytes.Buffer
	for _, name := range []string{"absolute", "relative", "date", "none"} {
		st, err := ParseStamp(name)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("--- " + name + "\n")
		ew := NewEventWriter(&out, false)
		ew.View.Stamp = st
		for i := range evs {
			if err := ew.Write(&evs[i]); err != nil {
				t.Fatal(err)
			}
		}
		ew.Flush()
	}
	golden.Check(t, "../testdata/formats/stamps.txt", out.Bytes())
	if _, err := ParseStamp("epoch"); err == nil || !strings.Contains(err.Error(), "absolute, relative, date, none") {
		t.Errorf("ParseStamp(epoch) = %v, want the valid names", err)
	}
}

// limitOf gives the test's call-fail events each limit: the cgroup's for
// a QP's, memlock's for an rdma_cm ID's.
func limitOf(k rdma.EventKind, res rdma.ResType) rdma.LimitKind {
	if res == rdma.ResQP {
		return rdma.LimitRDMACgroup
	}
	return rdma.LimitMemlock
}

// Every key EventObject writes, for an event of each kind with every
// optional part set, is in rdma.EventKeys with its value's kind: the table
// replay.Reader reads recordings by.
func TestEventObjectWritesOnlyTheTablesKeys(t *testing.T) {
	kinds := map[Kind][]rdma.EventValue{
		Str: {rdma.ValString}, Time: {rdma.ValString}, Bool: {rdma.ValBool}, StrList: {rdma.ValStrings},
		Micros: {rdma.ValMicros}, Int: {rdma.ValInt32}, Num: {rdma.ValUint8, rdma.ValUint32, rdma.ValUint64},
		Frames: {rdma.ValFrames},
	}
	seen := map[string]bool{}
	for k := rdma.EvCreate; k.String() != fmt.Sprintf("event-%d", uint8(k)); k++ {
		for _, res := range []rdma.ResType{rdma.ResQP, rdma.ResCMID} {
			e := rdma.Event{Kind: k, Time: time.Unix(1, 0), Flags: ^rdma.EventFlag(0) &^ rdma.EvActorExiting, Resource: rdma.Resource{Has: ^rdma.Field(0), Type: res, DevName: "rxe0", Port: 1, LQPN: 17, Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("10.0.0.2:2"), Owner: rdma.Owner{PID: 2, TID: 3, Comm: "c", KernName: "m",
				Place: &rdma.Placement{Cgroup: "/a", Runtime: "slurm", ContainerID: "42.0", PodUID: "u", PodNamespace: "ns", PodName: "p", NSPid: 1, NetNS: 1}}}, ID: 7, Status: -98, Actor: rdma.Owner{PID: 4, TID: 4, Comm: "a"}, OwnerCgroup: 9, Size: 1, Span: rdma.Span{Func: "f", Dur: 1}, OffCPU: rdma.OffCPU{Dur: 1, Wait: 1, Next: rdma.Owner{PID: 5, TID: 5, Comm: "n"}}, PortBusy: rdma.PortBusy{Op: "f", Holders: []string{"h"}, Suppressed: 1}, Inode: 1,
				SMC: rdma.SMCLink{LGR: 1, Role: "client", ID: 1, State: "active", HasLGR: true},
				QPAttr: rdma.QPAttr{Mask: rdma.QPAttrMaskAll, HasGID: true, SGID: netip.MustParseAddr("fe80::1"), HasNdev: true, Ndev: "eth0", NdevMTU: 1500, NetNS: 1,
					HasVLAN: true, VLAN: 5, HasGRH: true, DGID: netip.MustParseAddr("fe80::2")},
				Fault: rdma.Fault{Report: rdma.QPErrFirst, Count: 1, PeerGID: netip.MustParseAddr("::ffff:10.0.0.2"), PeerQPN: 18, OnPort: []string{"o"}},
				CallFail: rdma.CallFail{Op: "create_qp", Errno: 22, Asked: rdma.Asked{Has: rdma.AskedQP | rdma.AskedCQE | rdma.AskedMR},
					Caps: rdma.DevCaps{Valid: true}, Limit: rdma.CallLimit{Kind: limitOf(k, res), CgroupRes: "hca_object", Cgroup: &rdma.RDMACgroupUse{Path: "/p", Max: 8, Current: 8}}},
				GID:   rdma.GIDChange{Added: true, GID: netip.MustParseAddr("fe80::1"), Netdev: "eth0"},
				Stack: &rdma.CallStack{Via: "ibv_create_qp", Frames: []rdma.CallFrame{{Func: "main", File: "a.c", Line: 3, Binary: "/bin/a", Offset: 16, BuildID: "ab"}}}}
			for _, f := range EventObject(&e) {
				seen[f.Key] = true
				key, ok := rdma.EventKeyNamed(f.Key)
				if !ok {
					t.Errorf("%s: key %q is not in rdma.EventKeys", k, f.Key)
					continue
				}
				if !slices.Contains(kinds[f.Kind], key.Value) {
					t.Errorf("%s: key %q is written as kind %d, the table says %d", k, f.Key, f.Kind, key.Value)
				}
			}
		}
	}
	for _, k := range rdma.EventKeys {
		if !seen[k.Name] {
			t.Errorf("rdma.EventKeys has %q, which no event was written with", k.Name)
		}
	}
}

// A failed rdma_cm step says why in both views: -j adds "why", the
// human line the same words after its status; a success says nothing.
func TestCMFailureIsInWordsInBothViews(t *testing.T) {
	rej := rdma.Event{Kind: rdma.EvCMEventHandler, Flags: rdma.EvHasCM | rdma.EvHasRes, CMEvent: rdma.CMRejected, Status: 8}
	rej.Type = rdma.ResCMID
	rej.Src, rej.Dst = netip.MustParseAddrPort("10.0.0.1:0"), netip.MustParseAddrPort("10.0.0.7:7471")
	rej.Resource.Has |= rdma.HasSrcAddr
	want := "no listener on port 7471 at 10.0.0.7 (invalid service ID)"
	if line := EventLine(&rej); !strings.Contains(line, "event=REJECTED status=8 (invalid service ID): "+want+"; src=10.0.0.1:0 dst=10.0.0.7:7471") {
		t.Errorf("line %q", line)
	}
	if js := string(AppendJSON(nil, EventObject(&rej))); !strings.Contains(js, `"status":8,"status-name":"invalid service ID"`) || !strings.Contains(js, `"why":"`+want+`"`) {
		t.Errorf("JSON %s", js)
	}
	done := rej
	done.Kind = rdma.EvCMEventDone // the same event again: said once
	ok := rej
	ok.CMEvent, ok.Status = rdma.CMEvEstablished, 0
	for _, e := range []*rdma.Event{&done, &ok} {
		if line, js := EventLine(e), string(AppendJSON(nil, EventObject(e))); strings.Contains(line, want) || strings.Contains(js, `"why"`) {
			t.Errorf("%s %s: says why:\n%s\n%s", e.Kind, e.CMEvent, line, js)
		}
	}
}

// quietEvents is an rping client's start as trace sees it: two objects
// that existed before, a handler and its done, a QP its second thread
// creates and modifies.
func quietEvents() []rdma.Event {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	main := rdma.Owner{PID: 216, TID: 216, Comm: "rping"}
	thread := rdma.Owner{PID: 216, TID: 217, Comm: "rping"}
	kworker := rdma.Owner{PID: 12, TID: 12, Comm: "kworker/u8:0"}
	cm := rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0", Port: 1, Src: netip.MustParseAddrPort("10.99.0.1:47007"), Dst: netip.MustParseAddrPort("10.99.0.1:7174"),
		Owner: main, Has: rdma.HasPort | rdma.HasSrcAddr | rdma.HasPS}
	handler := rdma.Event{Time: at.Add(3 * time.Microsecond), Kind: rdma.EvCMEventHandler, Resource: cm, ID: 1, CMEvent: rdma.CMEvent(0), Actor: kworker,
		Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasCM | rdma.EvHasOwner}
	handler.SetState(uint8(rdma.CMAddrResolved))
	done := handler
	done.Time, done.Kind = at.Add(4*time.Microsecond), rdma.EvCMEventDone
	qp := rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 17, QPType: rdma.QPTypeRC, Owner: thread, Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType}
	create := rdma.Event{Time: at.Add(5 * time.Microsecond), Kind: rdma.EvCreate, Resource: qp, Actor: thread, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	modify := create
	modify.Time, modify.Kind, modify.PrevState = at.Add(6*time.Microsecond), rdma.EvModify, uint8(rdma.QPStateReset)
	modify.SetState(uint8(rdma.QPStateInit))
	modify.Flags |= rdma.EvHasPrevState
	pd := rdma.Event{Time: at, Kind: rdma.EvExists, Resource: rdma.Resource{Type: rdma.ResPD, DevName: "rxe0", Owner: main}, ID: 1, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
	cq := pd
	cq.Type, cq.Time = rdma.ResCQ, at.Add(time.Microsecond)
	return []rdma.Event{pd, cq, handler, done, create, modify}
}

// The human view is quiet by default: the start snapshot is one line of
// counts, an rdma_cm event is one line with its handler's result, every
// detail is labelled, and a thread's objects are its process's; -j has
// every event, the snapshot's and both halves of the rdma_cm event.
func TestTheHumanViewIsQuietAndLabelled(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	write := func(v EventView, json bool) string {
		var out bytes.Buffer
		w := NewEventWriter(&out, json)
		w.View = v
		for _, e := range quietEvents() {
			if err := w.Write(&e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	var all bytes.Buffer
	for _, c := range []struct {
		name string
		v    EventView
	}{{"default", EventView{}}, {"--snapshot", EventView{Snapshot: SnapshotList}},
		{"--no-snapshot -d", EventView{Snapshot: SnapshotHide, Threads: true}}} {
		all.WriteString("--- " + c.name + "\n" + write(c.v, false))
	}
	golden.Check(t, "../testdata/formats/quiet.txt", all.Bytes())
	got := all.String()
	for _, want := range []string{
		"2 resources existed when tracing started: 1 pd, 1 cq (--snapshot lists them)\nTIME",
		"rping[216]               id=1 state=ADDR_RESOLVED event=ADDR_RESOLVED result=0 src=10.99.0.1:47007 dst=10.99.0.1:7174 by=kworker/u8:0[12]\n",
		"rping[216]               lqpn=17 type=RC from=RESET to=INIT\n",
		"rping[216]               tid=217 lqpn=17 type=RC from=RESET to=INIT\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if n := strings.Count(got, "cm_event_done"); n != 0 {
		t.Errorf("%d cm_event_done lines: the handler's line has its result", n)
	}
	js := write(EventView{}, true)
	for kind, n := range map[string]int{`"event":"exists"`: 2, `"event":"cm_event_handler"`: 1, `"event":"cm_event_done"`: 1, `"pid":217,"tgid":216`: 2} {
		if got := strings.Count(js, kind); got != n {
			t.Errorf("-j has %d %s, want %d:\n%s", got, kind, n, js)
		}
	}
}

// A handler waits for its done at most cmHoldFor: a Flush past it shows
// the handler alone, and a done that comes later gets its line; the lines
// behind a waiting handler keep their order.
func TestAHandlerWithoutItsDoneIsShownAfterAWhile(t *testing.T) {
	evs := quietEvents()
	handler, done, create := evs[2], evs[3], evs[4]
	var out bytes.Buffer
	w := NewEventWriter(&out, false)
	w.View.Stamp = StampNone
	for _, e := range []*rdma.Event{&handler, &create} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if strings.Contains(out.String(), "create") {
		t.Fatalf("a line behind a waiting handler was written before it:\n%s", out.String())
	}
	w.held.q[w.held.head].at = time.Now().Add(-cmHoldFor)
	w.Flush()
	if err := w.Write(&done); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "cm_event_handler") || strings.Contains(lines[1], "result=") ||
		!strings.HasPrefix(lines[2], "create") || !strings.HasPrefix(lines[3], "cm_event_done") || !strings.Contains(lines[3], "result=0") {
		t.Errorf("got\n%s", out.String())
	}
}

// The done merges into its own handler's line, not into another ID's
// whose handler waits too.
func TestADoneMergesIntoItsOwnHandler(t *testing.T) {
	evs := quietEvents()
	h1, d1 := evs[2], evs[3]
	h2 := h1
	h2.ID, h2.Src = 2, netip.MustParseAddrPort("10.99.0.1:47008")
	d2 := h2
	d2.Kind, d2.Status = rdma.EvCMEventDone, -1
	var out bytes.Buffer
	w := NewEventWriter(&out, false)
	w.View.Stamp = StampNone
	for _, e := range []*rdma.Event{&h1, &h2, &d2, &d1} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush() // both merged: nothing waits
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "id=1 ") || !strings.Contains(lines[1], "result=0") ||
		!strings.Contains(lines[2], "id=2 ") || !strings.Contains(lines[2], "result=-1") {
		t.Errorf("got\n%s", out.String())
	}
}

// A destroy is one line: its destroy_begin is left out once the destroy
// comes; a destroy the driver aborted keeps its begin.
func TestADestroyIsOneLine(t *testing.T) {
	create := quietEvents()[4]
	begin, end := create, create
	begin.Kind, end.Kind = rdma.EvDestroyBegin, rdma.EvDestroy
	other := begin
	other.LQPN = 18
	abort := other
	abort.Kind = rdma.EvDestroyAbort
	var out bytes.Buffer
	w := NewEventWriter(&out, false)
	w.View.Stamp = StampNone
	for _, e := range []*rdma.Event{&begin, &other, &abort, &end} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush() // the aborted one's begin waits at most cmHoldFor
	w.held.q[w.held.head].at = time.Now().Add(-cmHoldFor)
	w.Close()
	got := strings.Split(strings.TrimSpace(out.String()), "\n")[1:]
	want := []string{"destroy qp rxe0/1 rping[216] lqpn=17 type=RC", "destroy_begin qp rxe0/1 rping[216] lqpn=18 type=RC",
		"destroy_abort qp rxe0/1 rping[216] lqpn=18 type=RC"}
	for i := range got {
		got[i] = strings.Join(strings.Fields(got[i]), " ")
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A stream in which a handler always waits keeps no more than it holds.
func TestTheHeldQueueDoesNotGrowWhileAHandlerAlwaysWaits(t *testing.T) {
	evs := quietEvents()
	handler, done, create := evs[2], evs[3], evs[4]
	w := NewEventWriter(discard{}, false)
	for i := 0; i < 10000; i++ {
		// The next ID's handler comes before this one's done.
		h := handler
		h.ID = uint32(i + 1)
		d := done
		d.ID = h.ID
		for _, e := range []*rdma.Event{&h, &create} {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		if i > 0 {
			prev := done
			prev.ID = uint32(i)
			if err := w.Write(&prev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := cap(w.held.q); n > 64 {
		t.Errorf("the queue holds room for %d lines after 10000 events, with 2 held", n)
	}
}
