package rdma

import (
	"net/netip"
	"strings"
	"testing"
)

func qpModify(prev, state QPState) *Event {
	e := &Event{Kind: EvModify, Flags: EvHasRes | EvHasDev | EvHasOwner | EvHasPrevState, PrevState: uint8(prev)}
	e.Type, e.DevName, e.LQPN = ResQP, "rxe0", 17
	e.Resource.Has |= HasLQPN
	e.SetState(uint8(state))
	return e
}

func TestFailureSaysWhichEventsAreFailuresAndHowBad(t *testing.T) {
	exiting := qpModify(QPStateRTS, QPStateErr)
	exiting.Flags |= EvActorExiting
	done := cmEvent(CMRejected, 8, true)
	done.Kind = EvCMEventDone
	busy := &Event{Kind: EvPortBusy, PortBusy: PortBusy{Op: "rdma_listen"}, Status: -98}
	busy.Src = netip.MustParseAddrPort("10.0.0.1:7471")
	abort := &Event{Kind: EvDestroyAbort, Flags: EvHasRes}
	abort.Type = ResCQ
	link := &Event{Kind: EvSMCLinkDown, Flags: EvHasDev, SMC: SMCLink{LGR: 0x1234, ID: 2}}
	link.DevName = "rxe0"
	qpc := &Event{Kind: EvCMQPCreate, Status: -12}
	async := func(ev IBEvent) *Event { return &Event{Kind: EvAsync, Fault: Fault{IBEvent: ev}} }
	qpErr := func(r QPErrorReport, st WCStatus) *Event {
		return &Event{Kind: EvQPError, Flags: EvHasRes, Fault: Fault{Report: r, WCStatus: st, Count: 1,
			PeerGID: netip.MustParseAddr("::ffff:10.0.0.2"), PeerQPN: 18}}
	}
	for _, tc := range []struct {
		name string
		e    *Event
		what string
		sev  Severity
		why  string // a part of the sentence
	}{
		{"a rejected connection", cmEvent(CMRejected, 8, true), "REJECTED", SevWarn, "no listener on port 7471"},
		{"an address error", cmEvent(CMEvAddrError, -110, false), "ADDR_ERROR", SevWarn, "address resolution timed out"},
		{"a device removal is fatal", cmEvent(CMEvDeviceRemoval, 0, true), "DEVICE_REMOVAL", SevFatal, "is being removed"},
		{"an established connection", cmEvent(CMEvEstablished, 0, true), "", 0, ""},
		{"cm_event_done repeats its handler's event", done, "", 0, ""},
		{"a QP moved to ERR", qpModify(QPStateRTS, QPStateErr), "QP_ERR", SevWarn, "QP moved to ERR from RTS"},
		{"a QP moved to SQE", qpModify(QPStateRTS, QPStateSQE), "QP_SQE", SevWarn, "moved to SQE from RTS"},
		{"a QP moved to RTS", qpModify(QPStateRTR, QPStateRTS), "", 0, ""},
		{"a QP moved to ERR in the exit cleanup", exiting, "", 0, ""},
		{"a destroy the driver refused", abort, "destroy_abort", SevWarn, "refused to destroy the cq"},
		{"a port taken", busy, "port-busy", SevWarn, "rdma_listen on 10.0.0.1:7471 got EADDRINUSE"},
		{"an SMC fallback", &Event{Kind: EvSMCFallback, Status: 0x03030000}, "smc-fallback", SevWarn, "SMC fell back to TCP: "},
		{"an SMC-R link down", link, "smc-link-down", SevWarn, "SMC-R link 00001234/2 went down on rxe0"},
		{"a QP rdma_cm could not create", qpc, "cm_qp_create", SevWarn, "ENOMEM"},
		{"a QP rdma_cm created", &Event{Kind: EvCMQPCreate}, "", 0, ""},
		{"a resource created", &Event{Kind: EvCreate}, "", 0, ""},
		{"a port down", async(IBEventPortErr), "PORT_ERR", SevWarn, "port error: the port went down"},
		{"a port up", async(IBEventPortActive), "", 0, ""},
		{"a QP fatal", async(1), "QP_FATAL", SevFatal, "QP fatal error: "},
		{"a device fatal", async(IBEventDeviceFatal), "DEVICE_FATAL", SevFatal, "every object on it is lost"},
		{"communication established", async(4), "", 0, ""},
		{"a peer gone", qpErr(QPErrFirst, 12), "qp-error", SevFatal, "first error completion RETRY_EXC_ERR (transport retry counter exceeded): the peer stopped answering"},
		{"a peer gone, with the peer", qpErr(QPErrFirst, 12), "qp-error", SevFatal, "; peer 10.0.0.2 QP 18"},
		{"flushed requests", qpErr(QPErrFirst, WCFlushErr), "", 0, ""},
		{"the counts at destroy", qpErr(QPErrTotal, 12), "", 0, ""},
		{"the driver's move to ERR", qpErr(QPErrDriver, 0), "QP_ERR", SevWarn, "the driver moved the QP to ERR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := tc.e.Failure()
			if ok != (tc.what != "") || f.What != tc.what || f.Severity != tc.sev || !strings.Contains(f.Why, tc.why) {
				t.Errorf("Failure() = %+v, %v; want %q %v containing %q", f, ok, tc.what, tc.sev, tc.why)
			}
		})
	}
}

func TestSeverityNames(t *testing.T) {
	if SevWarn.String() != "warn" || SevFatal.String() != "fatal" || Severity(0).String() != "" {
		t.Errorf("got %q %q %q", SevWarn, SevFatal, Severity(0))
	}
}
