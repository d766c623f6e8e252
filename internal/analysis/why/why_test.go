package why

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

var t0 = time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)

// id is an event of rping's rdma_cm ID (at 0xa1) to 10.0.0.7:7471, at t0+ms.
func id(kind rdma.EventKind, ms int, state rdma.CMState) *rdma.Event {
	e := &rdma.Event{Kind: kind, Time: t0.Add(time.Duration(ms) * time.Millisecond), Obj: 0xa1,
		Flags: rdma.EvHasRes | rdma.EvHasOwner | rdma.EvHasDev}
	e.Type, e.DevName, e.Port = rdma.ResCMID, "rxe0", 1
	e.Owner = rdma.Owner{PID: 225, TID: 225, Comm: "rping"}
	e.Src, e.Dst = netip.MustParseAddrPort("10.0.0.1:40000"), netip.MustParseAddrPort("10.0.0.7:7471")
	e.Resource.Has |= rdma.HasSrcAddr | rdma.HasPS | rdma.HasPort
	e.SetState(uint8(state))
	return e
}

func delivered(ms int, ev rdma.CMEvent, status int32, state rdma.CMState) *rdma.Event {
	e := id(rdma.EvCMEventHandler, ms, state)
	e.Flags |= rdma.EvHasCM
	e.CMEvent, e.Status = ev, status
	return e
}

func feed(a *Analyzer, evs ...*rdma.Event) []Line {
	var out []Line
	for _, e := range evs {
		out = append(out, a.Feed(e)...)
	}
	return out
}

func whys(ls []Line) string {
	var b []string
	for _, l := range ls {
		b = append(b, l.Time.Sub(t0).String()+" "+l.What+" "+l.Res.Owner.Comm+" "+l.Peer+": "+l.Why)
	}
	return strings.Join(b, "\n")
}

func TestWhyListsFailuresAndUnansweredSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		evs  []*rdma.Event
		end  bool
		want string
	}{
		{"a rejected connect", Options{}, []*rdma.Event{
			id(rdma.EvCMSendReq, 0, rdma.CMConnect),
			delivered(40, rdma.CMRejected, 8, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 60, rdma.CMConnect),
		}, false, "40ms REJECTED rping 10.0.0.7:7471: no listener on port 7471 at 10.0.0.7 from rxe0/1 (invalid service ID)"},
		{"a connect destroyed unanswered", Options{}, []*rdma.Event{
			id(rdma.EvCMSendReq, 0, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 3000, rdma.CMConnect),
		}, false, "3s no-answer rping 10.0.0.7:7471: no answer to the connect of 10.0.0.7:7471 after 3.0 s, before it was destroyed"},
		{"a connect unanswered past the wait, listed once", Options{Wait: 2 * time.Second}, []*rdma.Event{
			id(rdma.EvCMSendReq, 0, rdma.CMConnect),
			{Kind: rdma.EvCreate, Time: t0.Add(2500 * time.Millisecond)},
			id(rdma.EvCMIDDestroy, 5000, rdma.CMConnect),
		}, false, "2s no-answer rping 10.0.0.7:7471: no answer to the connect of 10.0.0.7:7471 after 2.0 s"},
		{"a route resolution unanswered at the end", Options{}, []*rdma.Event{
			delivered(0, rdma.CMEvAddrResolved, 0, rdma.CMAddrResolved),
			{Kind: rdma.EvCreate, Time: t0.Add(1500 * time.Millisecond)},
		}, true, "1.5s no-answer rping 10.0.0.7:7471: no answer to the route resolution of 10.0.0.7:7471 after 1.5 s, when the trace ended"},
		{"an established connection torn down says nothing", Options{}, []*rdma.Event{
			id(rdma.EvCMSendReq, 0, rdma.CMConnect),
			delivered(30, rdma.CMEvConnectResponse, 0, rdma.CMConnect),
			id(rdma.EvCMSendRTU, 31, rdma.CMConnect),
			id(rdma.EvCMDisconnect, 900, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 1000, rdma.CMDisconnect),
		}, true, ""},
		{"a connection that existed before the trace says nothing at its end", Options{}, []*rdma.Event{
			id(rdma.EvExists, 0, rdma.CMConnect),
			id(rdma.EvCMDisconnect, 900, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 1000, rdma.CMDisconnect),
		}, true, ""},
		{"the passive side's connect is not ours to answer", Options{}, []*rdma.Event{
			id(rdma.EvCMReqHandler, 0, rdma.CMConnect),
			id(rdma.EvCMSendRep, 1, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 5000, rdma.CMConnect),
		}, true, ""},
		{"a resolve that failed in the call", Options{}, []*rdma.Event{
			func() *rdma.Event {
				e := id(rdma.EvCMIDDestroy, 10, rdma.CMAddrBound)
				e.Flags &^= rdma.EvHasDev
				return e
			}(),
		}, false, "10ms resolve-failed rping 10.0.0.7:7471: rdma_resolve_addr to 10.0.0.7:7471 failed in the call (no route to it, or no RDMA device on the way): only the program saw the error"},
		{"another owner's failures are not listed", Options{Match: func(e *rdma.Event) bool { return e.Owner.PID == 1 }}, []*rdma.Event{
			id(rdma.EvCMSendReq, 0, rdma.CMConnect),
			delivered(40, rdma.CMRejected, 8, rdma.CMConnect),
			id(rdma.EvCMIDDestroy, 60, rdma.CMConnect),
		}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.o)
			got := feed(a, tc.evs...)
			if tc.end {
				got = append(got, a.End(tc.evs[len(tc.evs)-1].Time)...)
			}
			if g := whys(got); g != tc.want {
				t.Errorf("got\n%s\nwant\n%s", g, tc.want)
			}
		})
	}
}

// A QP's failure reported without its owner (a driver's, a kworker's)
// is named by the live table, and --qpn keeps that QP and its ID.
func TestWhyNamesTheOwnerFromTheLiveTableAndSelectsByQPN(t *testing.T) {
	qp := func(kind rdma.EventKind, ms int, lqpn uint32, st rdma.QPState, owned bool) *rdma.Event {
		e := &rdma.Event{Kind: kind, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev}
		e.Type, e.DevName, e.DevIndex, e.LQPN, e.QPType = rdma.ResQP, "rxe0", 1, lqpn, rdma.QPTypeRC
		e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		if owned {
			e.Flags |= rdma.EvHasOwner
			e.Owner = rdma.Owner{PID: 300, TID: 300, Comm: "app"}
		}
		e.SetState(uint8(st))
		return e
	}
	made := id(rdma.EvCMQPCreate, 1, rdma.CMRouteResolved)
	made.LQPN = 17
	made.Resource.Has |= rdma.HasLQPN
	a := New(Options{QPN: 17, HasQPN: true})
	got := feed(a,
		qp(rdma.EvCreate, 0, 17, rdma.QPStateReset, true),
		qp(rdma.EvCreate, 0, 18, rdma.QPStateReset, true),
		made,
		qp(rdma.EvModify, 10, 18, rdma.QPStateErr, false),
		qp(rdma.EvModify, 20, 17, rdma.QPStateErr, false),
		delivered(30, rdma.CMRejected, 28, rdma.CMConnect),
	)
	got = append(got, a.End(t0.Add(time.Second))...) // QP 17's move to ERR waited for a disconnect or destroy
	sortLines(got)
	want := "20ms QP_ERR app : QP moved to ERR: its outstanding work requests are flushed with errors\n" +
		"30ms REJECTED rping 10.0.0.7:7471: peer 10.0.0.7:7471 rejected the connection: consumer defined (its program or its rdma_cm refused it) from rxe0/1"
	if g := whys(got); g != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
}

// A QP moved to ERR after its ID disconnected is the teardown's flush,
// not listed; one moved to ERR while connected, with no disconnect within
// failures.Hold, is.
func TestWhyLeavesOutTheTeardownsMoveToERR(t *testing.T) {
	qpErr := func(ms int) *rdma.Event {
		e := &rdma.Event{Kind: rdma.EvModify, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
		e.Type, e.DevName, e.LQPN = rdma.ResQP, "rxe0", 17
		e.Owner = rdma.Owner{PID: 225, TID: 225, Comm: "rping"}
		e.Resource.Has |= rdma.HasLQPN
		e.SetState(uint8(rdma.QPStateErr))
		return e
	}
	disc := id(rdma.EvCMDisconnect, 3000, rdma.CMConnect)
	disc.LQPN = 17
	disc.Resource.Has |= rdma.HasLQPN
	a := New(Options{})
	got := feed(a, qpErr(50), disc, qpErr(3010))
	got = append(got, a.End(t0.Add(4*time.Second))...)
	if g, want := whys(got), "50ms QP_ERR rping : QP moved to ERR: its outstanding work requests are flushed with errors"; g != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
}

// librdmacm's rdma_disconnect moves a user QP to ERR before it asks the
// kernel to disconnect (the rping client at -C's end, perftest's -R
// client): the move comes first, the disconnect a moment later, and the
// end is no failure. A tidy program's move to ERR before its explicit
// destroy is none either; one whose process exits with the QP in ERR and
// no disconnect is, and so is one that nothing follows within failures.Hold.
func TestWhyQuietOnADisconnectOrDestroyAfterTheMoveToERR(t *testing.T) {
	qp := func(kind rdma.EventKind, ms int, lqpn uint32) *rdma.Event {
		e := &rdma.Event{Kind: kind, Time: t0.Add(time.Duration(ms) * time.Millisecond), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
		e.Type, e.DevName, e.LQPN = rdma.ResQP, "rxe0", lqpn
		e.Owner = rdma.Owner{PID: 225, TID: 225, Comm: "rping"}
		e.Resource.Has |= rdma.HasLQPN
		if kind == rdma.EvModify {
			e.SetState(uint8(rdma.QPStateErr))
		}
		return e
	}
	disc := id(rdma.EvCMDisconnect, 51, rdma.CMConnect)
	disc.LQPN = 17
	disc.Resource.Has |= rdma.HasLQPN
	exitDestroy := qp(rdma.EvDestroyBegin, 80, 19)
	exitDestroy.Flags |= rdma.EvActorExiting
	a := New(Options{})
	got := feed(a,
		qp(rdma.EvModify, 50, 17), disc, // rdma_disconnect's order
		qp(rdma.EvModify, 60, 18), qp(rdma.EvDestroyBegin, 61, 18), // a tidy destroy
		qp(rdma.EvModify, 70, 19), exitDestroy, // in ERR at its process's exit
		qp(rdma.EvModify, 90, 20), // nothing follows
		qp(rdma.EvCreate, 2500, 21))
	got = append(got, a.End(t0.Add(3*time.Second))...)
	want := "70ms QP_ERR rping : QP moved to ERR: its outstanding work requests are flushed with errors\n" +
		"90ms QP_ERR rping : QP moved to ERR: its outstanding work requests are flushed with errors"
	if g := whys(got); g != want {
		t.Errorf("got\n%s\nwant\n%s", g, want)
	}
}

// With NamePeer (why --store), a failed QP's sentence ends with what it
// says of the peer; other failures are left as they are.
func TestNamePeerAddsToAFailedQPsSentence(t *testing.T) {
	var asked []uint32
	a := New(Options{NamePeer: func(l *Line) string {
		asked = append(asked, l.Res.LQPN)
		return "its peer QP 34 on node-b was destroyed"
	}})
	e := &rdma.Event{Kind: rdma.EvModify, Time: time.Unix(10, 0), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner,
		Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", LQPN: 17, Has: rdma.HasLQPN, Owner: rdma.Owner{PID: 1, TID: 1, Comm: "x"}}}
	e.SetState(uint8(rdma.QPStateErr))
	ls := append(a.Feed(e), a.End(time.Unix(20, 0))...) // the move to ERR waits for a disconnect or destroy
	if len(ls) != 1 || !strings.HasSuffix(ls[0].Why, "; its peer QP 34 on node-b was destroyed") || len(asked) != 1 || asked[0] != 17 {
		t.Errorf("lines %+v, asked %v", ls, asked)
	}
}
