package rdma

import (
	"fmt"
	"strconv"
)

// Severity is how bad a failure is.
type Severity uint8

const (
	// SevWarn: something failed and the owner can go on or try again (a
	// connection refused, a port taken, a fallback to TCP).
	SevWarn Severity = iota + 1
	// SevFatal: the object is lost for good and not by its owner's
	// choice (a device going away under its IDs; the async QP_FATAL and
	// DEVICE_FATAL).
	SevFatal
)

func (s Severity) String() string {
	switch s {
	case SevWarn:
		return "warn"
	case SevFatal:
		return "fatal"
	}
	return ""
}

// Failure is what an event says went wrong.
type Failure struct {
	// What names the failure in a few fixed words, for counting: the
	// rdma_cm event (REJECTED, ADDR_ERROR...), QP_ERR or QP_SQE for a QP
	// moved there, or the event's kind (destroy_abort, port-busy,
	// smc-fallback, smc-link-down). A small fixed set: the exporter's
	// event label.
	What     string
	Severity Severity
	// Why is the sentence a person on call reads.
	Why string
}

// Failure says whether the event reports a failure, and which: the one
// predicate the trace view's words, the cm-error and failure filters, the
// why view, the exporter's failure counter and the OTLP severity share.
func (e *Event) Failure() (Failure, bool) {
	switch e.Kind {
	case EvCMEventHandler: // cm_event_done is the same event again, after the program's handler
		why := CMFailure(e)
		if why == "" {
			return Failure{}, false
		}
		sev := SevWarn
		if e.CMEvent == CMEvDeviceRemoval {
			sev = SevFatal
		}
		return Failure{What: e.CMEvent.String(), Severity: sev, Why: why}, true
	case EvModify:
		// A modify to ERR is the kernel's or the program's explicit
		// move (_ib_modify_qp): a QP that failed, or one being torn down
		// (rdma_disconnect flushes through ERR). A cleanup at exit or
		// close is no failure of its own.
		if e.Type != ResQP || !e.Given(HasState) || e.Cleanup() != "" {
			return Failure{}, false
		}
		switch e.QPState {
		case QPStateErr:
			// Not fatal in itself: a disconnect moves a QP to ERR too.
			return Failure{What: "QP_ERR", Severity: SevWarn, Why: "QP moved to ERR" + fromState(e) + ": its outstanding work requests are flushed with errors"}, true
		case QPStateSQE:
			return Failure{What: "QP_SQE", Severity: SevWarn, Why: "QP moved to SQE" + fromState(e) + ": a send work request completed in error, the send queue stopped"}, true
		}
	case EvDestroyAbort:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "the driver refused to destroy the " + e.Type.String() + ": it stays alive (still in use?)"}, true
	case EvPortBusy:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: e.PortBusy.Op + " on " + e.Src.String() + " got EADDRINUSE: the port is taken"}, true
	case EvSMCFallback:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "SMC fell back to TCP: " + SMCReason(uint32(e.Status))}, true
	case EvSMCLinkDown:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "SMC-R link " + LGRID(e.SMC.LGR) + "/" + strconv.Itoa(int(e.SMC.ID)) + " went down on " + devText(e)}, true
	case EvCallFail:
		what := "create-failed"
		if e.CallFail.IsCMStep() {
			what = "cm-call-failed"
		}
		return Failure{What: what, Severity: SevWarn, Why: CallFailWhy(e)}, true
	case EvCMQPCreate:
		if e.Status != 0 {
			return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "rdma_cm could not create the QP: " + CMStatusName(^CMEvent(0), e.Status)}, true
		}
	}
	return newKindFailure(e)
}

// newKindFailure covers the kernel's own failure reports: IB async events
// of the error types, and a QP's errors as its driver saw them.
func newKindFailure(e *Event) (Failure, bool) {
	switch e.Kind {
	case EvAsync:
		ev := e.Fault.IBEvent
		meaning, ok := asyncMeanings[ev]
		if !ok {
			return Failure{}, false // PORT_ACTIVE, COMM_EST, LID_CHANGE...: news, not failures
		}
		sev := SevFatal
		if ev == IBEventPortErr || ev == ibEventPathMigErr {
			sev = SevWarn // a port can come back; the primary path still works
		}
		return Failure{What: ev.String(), Severity: sev, Why: ev.Message() + ": " + meaning + peerOf(e)}, true
	case EvQPError:
		switch e.Fault.Report {
		case QPErrDriver:
			// A move to ERR by the driver itself (rxe's own, not the one
			// inside or after a modify to ERR, which the tracer leaves
			// out): a warning, as a modify to ERR is.
			return Failure{What: "QP_ERR", Severity: SevWarn, Why: "the driver moved the QP to ERR" + peerOf(e)}, true
		case QPErrFirst:
			st := e.Fault.WCStatus
			if st == WCFlushErr {
				// Flushed requests follow a QP's move to ERR, a teardown's
				// as well as a failure's: the cause, if any, is elsewhere.
				return Failure{}, false
			}
			why := "first error completion " + st.String() + " (" + st.Message() + ")"
			if m := wcMeanings[st]; m != "" {
				why += ": " + m
			}
			return Failure{What: "qp-error", Severity: SevFatal, Why: why + peerOf(e)}, true
		}
		// QPErrTotal: the counts at the QP's destroy; its first error was
		// reported when it came.
	}
	return Failure{}, false
}

// The IB events and completion statuses the words below name (enum
// ib_event_type, enum ib_wc_status).
const (
	ibEventCQErr       IBEvent = 0
	ibEventQPFatal     IBEvent = 1
	ibEventQPReqErr    IBEvent = 2
	ibEventQPAccessErr IBEvent = 3
	ibEventPathMigErr  IBEvent = 7
	ibEventSRQErr      IBEvent = 14
	ibEventWQFatal     IBEvent = 19

	wcLocLenErr      WCStatus = 1
	wcLocProtErr     WCStatus = 4
	wcRemInvReqErr   WCStatus = 9
	wcRemAccessErr   WCStatus = 10
	wcRetryExcErr    WCStatus = 12
	wcRNRRetryExcErr WCStatus = 13
)

// asyncMeanings are the async events that report a failure, and what
// each means to the owner of the object (the IB spec's affiliated and
// unaffiliated errors; include/rdma/ib_verbs.h).
var asyncMeanings = map[IBEvent]string{
	ibEventCQErr:       "the CQ overran (more completions than entries) or failed; its QPs go to ERR",
	ibEventQPFatal:     "the QP hit an error no completion can report and is in ERR",
	ibEventQPReqErr:    "the responder found an invalid request (a transport error); the QP is in ERR",
	ibEventQPAccessErr: "an RDMA access broke an MR's rights or bounds at the responder; the QP is in ERR",
	ibEventPathMigErr:  "the move to the alternate path failed",
	IBEventDeviceFatal: "the device failed (firmware, PCI): every object on it is lost",
	IBEventPortErr:     "the port went down (link, cable or net device); its connections stop until it is back",
	ibEventSRQErr:      "the SRQ failed; the QPs using it go to ERR",
	ibEventWQFatal:     "the WQ failed",
}

// wcMeanings say what the commonest error completions mean in practice.
var wcMeanings = map[WCStatus]string{
	wcLocLenErr:      "a message longer than the receive buffer posted for it",
	wcLocProtErr:     "a local buffer outside its MR, or a wrong lkey",
	wcRemInvReqErr:   "the peer found the request invalid (opcode, length)",
	wcRemAccessErr:   "the peer refused an RDMA access (rkey, rights or bounds)",
	wcRetryExcErr:    "the peer stopped answering: transport retries exhausted (peer dead or unreachable, or its QP gone)",
	wcRNRRetryExcErr: "the peer posted no receive in time: RNR retries exhausted",
}

// peerOf names the QP's peer where the driver knew it.
func peerOf(e *Event) string {
	if !e.Fault.HasPeer() {
		return ""
	}
	return fmt.Sprintf("; peer %s QP %d", e.Fault.PeerGID.Unmap(), e.Fault.PeerQPN)
}

func fromState(e *Event) string {
	if !e.Has(EvHasPrevState) {
		return ""
	}
	return " from " + e.StateName(true)
}
