package rdma

import "strconv"

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
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: e.Func + " on " + e.Src.String() + " got EADDRINUSE: the port is taken"}, true
	case EvSMCFallback:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "SMC fell back to TCP: " + SMCReason(uint32(e.Status))}, true
	case EvSMCLinkDown:
		return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "SMC-R link " + LGRID(e.SMC.LGR) + "/" + strconv.Itoa(int(e.SMC.ID)) + " went down on " + devText(e)}, true
	case EvCMQPCreate:
		if e.Status != 0 {
			return Failure{What: e.Kind.String(), Severity: SevWarn, Why: "rdma_cm could not create the QP: " + CMStatusName(^CMEvent(0), e.Status)}, true
		}
	}
	// Kinds added after these: IB async events (their error types) and
	// driver QP errors or error completions get their cases here.
	return newKindFailure(e)
}

// newKindFailure is the switch for the event kinds the kernel side adds
// (IB async events of the error types: QP_FATAL, QP_REQ_ERR,
// QP_ACCESS_ERR, CQ_ERR, SRQ_ERR, PORT_ERR, DEVICE_FATAL; driver QP errors
// and error completions): none exist yet.
func newKindFailure(e *Event) (Failure, bool) {
	switch e.Kind {
	// The IB async events ("async"): What is the event's name (QP_FATAL,
	// PORT_ERR...: the alerts in deploy/prometheus match these), SevFatal
	// for QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, CQ_ERR, SRQ_ERR and
	// DEVICE_FATAL, SevWarn for PORT_ERR and the rest of the error types;
	// no failure for the others (PORT_ACTIVE, COMM_EST, LID_CHANGE...).
	//
	// Driver QP errors and error completions ("qp-error"): What
	// "qp-error", SevFatal, Why naming the completion status
	// (RETRY_EXC_ERR: "the peer stopped answering; retries exhausted").
	}
	return Failure{}, false
}

func fromState(e *Event) string {
	if !e.Has(EvHasPrevState) {
		return ""
	}
	return " from " + e.StateName(true)
}
