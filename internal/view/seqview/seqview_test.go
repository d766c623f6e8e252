package seqview

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay/replaytest"
)

var testdata = filepath.Join("..", "..", "..", "testdata")

// An rping pair that connects, sends and disconnects on Debian's 6.12
// (testdata/tracer/6.12, recorded in the guest): the client and server
// are found, each message ends at the event it caused on the other side.
func TestGoldenRping(t *testing.T) {
	evs := replaytest.Events(t, filepath.Join(testdata, "tracer", "6.12", "trace.ndjson"))
	c, s, err := Pair(evs)
	if err != nil {
		t.Fatal(err)
	}
	if c != 216 || s != 213 {
		t.Errorf("pair: client %d, server %d; want rping[216] to rping[213]", c, s)
	}
	var b bytes.Buffer
	if err := Render(&b, evs, Options{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(testdata, "seqview", "rping-6.12.svg"), b.Bytes())

	rows, names, _ := collect(evs, Options{Client: c, Server: s})
	if names[client] != "rping[216] (client) 10.99.0.1:47007" || names[server] != "rping[213] (server) 10.99.0.1:7174" {
		t.Errorf("columns %q", names)
	}
	// Each message and where it ends.
	ends := map[string]string{}
	for _, r := range rows {
		if r.msg == "" {
			continue
		}
		to := "-"
		if r.to >= 0 {
			to = rows[r.to].label
		}
		ends[r.msg] += to + ";"
	}
	want := map[string]string{
		"REQ":  "request reaches listener;",
		"REP":  "CONNECT_RESPONSE;",
		"RTU":  "ESTABLISHED;",
		"DREQ": "DISCONNECTED;",
		"DREP": "DISCONNECTED;",
		"MRA":  "-;-;",
	}
	for m, w := range want {
		if ends[m] != w {
			t.Errorf("%s ends at %q, want %q", m, ends[m], w)
		}
	}
	// The QP moves of both sides.
	var moves []string
	for _, r := range rows {
		if strings.HasPrefix(r.label, "QP ") {
			moves = append(moves, r.label)
		}
	}
	if got := strings.Join(moves, "|"); got != "QP 17 created RC|QP 17 RESET → INIT|QP 18 created RC|QP 18 RESET → INIT|QP 18 INIT → INIT|QP 18 INIT → RTR|QP 18 RTR → RTS|QP 17 INIT → INIT|QP 17 INIT → RTR|QP 17 RTR → RTS|QP 17 RTS → ERR|QP 18 RTS → ERR|QP 17 destroyed|QP 18 destroyed" {
		t.Errorf("QP moves: %s", got)
	}
}

// A pause of 100 ms or more gets a row that says how long; the arrows
// across it still end at their event.
func TestPauseRow(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	ev := func(at time.Duration, pid uint32, k rdma.EventKind, cm rdma.CMEvent) rdma.Event {
		e := rdma.Event{Time: t0.Add(at), Kind: k, CMEvent: cm, Flags: rdma.EvHasRes | rdma.EvHasOwner}
		e.Type, e.Owner = rdma.ResCMID, rdma.Owner{PID: pid, Comm: "app"}
		return e
	}
	evs := []rdma.Event{
		ev(0, 1, rdma.EvCMSendReq, 0),
		ev(time.Millisecond, 2, rdma.EvCMReqHandler, 0),
		ev(3*time.Second, 2, rdma.EvCMSendRep, 0),
		ev(3*time.Second+time.Millisecond, 1, rdma.EvCMEventHandler, 5), // CONNECT_RESPONSE
	}
	rows, _, _ := collect(evs, Options{Client: 1, Server: 2})
	if len(rows) != 5 || rows[2].gap < 2*time.Second || rows[3].msg != "REP" || rows[3].to != 4 {
		t.Fatalf("rows %+v", rows)
	}
	var b bytes.Buffer
	if err := Render(&b, evs, Options{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "nothing for 2.999 s") {
		t.Errorf("no pause row:\n%s", b.String())
	}
}

// Names from processes are escaped, never markup or control characters.
func TestEscapes(t *testing.T) {
	e := rdma.Event{Kind: rdma.EvCMSendReq, Flags: rdma.EvHasRes | rdma.EvHasOwner}
	e.Type, e.Owner = rdma.ResCMID, rdma.Owner{PID: 1, Comm: "<script>\x1b[2J&"}
	f := rdma.Event{Kind: rdma.EvCMReqHandler, Flags: rdma.EvHasRes | rdma.EvHasOwner}
	f.Type, f.Owner = rdma.ResCMID, rdma.Owner{PID: 2, Comm: "srv"}
	var b bytes.Buffer
	if err := Render(&b, []rdma.Event{e, f}, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), "&lt;script&gt;[2J&amp;") {
		t.Errorf("not escaped:\n%s", b.String())
	}
}

// A recording with no connect says so.
func TestNoConnection(t *testing.T) {
	evs := replaytest.Events(t, filepath.Join(testdata, "why", "rping-failures.ndjson"))
	var b bytes.Buffer
	err := Render(&b, evs[:1], Options{})
	if err == nil || !strings.Contains(err.Error(), "cm_send_req") {
		t.Errorf("err %v", err)
	}
}

// A flushed completion at a normal end is drawn plain; a retry exceeded
// (the peer stopped answering) is a failure, as why says.
func TestQPErrorColours(t *testing.T) {
	qe := func(st rdma.WCStatus) rdma.Event {
		e := rdma.Event{Kind: rdma.EvQPError, Flags: rdma.EvHasRes | rdma.EvHasOwner}
		e.Type, e.LQPN, e.Owner = rdma.ResQP, 17, rdma.Owner{PID: 1}
		e.Fault = rdma.Fault{Report: rdma.QPErrFirst, WCStatus: st, Count: 1}
		return e
	}
	flush, _ := rowOf(&[]rdma.Event{qe(rdma.WCFlushErr)}[0])
	retry, _ := rowOf(&[]rdma.Event{qe(12)}[0])
	if flush.fail || flush.label != "QP 17 WR_FLUSH_ERR (first error)" {
		t.Errorf("flush: %+v", flush)
	}
	if !retry.fail || retry.label != "QP 17 RETRY_EXC_ERR (first error)" {
		t.Errorf("retry exceeded: %+v", retry)
	}
}
