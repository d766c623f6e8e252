package rdma

import (
	"fmt"
	"net/netip"
)

// IBEvent is enum ib_event_type: an asynchronous event of a device, a port
// or an object (EvAsync).
type IBEvent uint8

// Its names are the kernel's constants without IB_EVENT_.
var ibEventNames = names{"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR", "LID_CHANGE", "PKEY_CHANGE",
	"SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE",
	"WQ_FATAL"}

// ibEventMsgs is what the kernel's ib_event_msg() says of each.
var ibEventMsgs = names{"CQ error", "QP fatal error", "QP request error", "QP access error",
	"communication established", "send queue drained", "path migration successful", "path migration error",
	"device fatal error", "port active", "port error", "LID change", "P_key change", "SM change", "SRQ error",
	"SRQ limit reached", "last WQE reached", "client reregister", "GID changed", "WQ fatal error"}

// The events about a port (element.port_num) or the whole device.
const (
	IBEventDeviceFatal IBEvent = 8
	IBEventPortActive  IBEvent = 9
	IBEventPortErr     IBEvent = 10
)

func (e IBEvent) String() string { return ibEventNames.name(int(e), fmt.Sprintf("EVENT_%d", uint8(e))) }

// Message is the kernel's ib_event_msg() of the event.
func (e IBEvent) Message() string { return ibEventMsgs.name(int(e), "unrecognized event") }

// ParseIBEvent parses an event name such as "PORT_ERR" (IB_EVENT_ may
// precede it).
func ParseIBEvent(s string) (IBEvent, error) {
	if len(s) > 9 && (s[:9] == "IB_EVENT_" || s[:9] == "ib_event_") {
		s = s[9:]
	}
	v, err := ibEventNames.parse("IB event", s)
	return IBEvent(v), err
}

// WCStatus is enum ib_wc_status: how a work request completed.
type WCStatus uint8

// Its names are the kernel's constants without IB_WC_, as ibv_wc_status_str
// spells them in rdma-core's enum (IBV_WC_...).
var wcStatusNames = names{"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",
	"REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR",
	"REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR"}

// wcStatusMsgs is what the kernel's ib_wc_status_msg() says of each.
var wcStatusMsgs = names{"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "WR flushed", "memory bind operation error", "bad response error",
	"local access error", "remote invalid request error", "remote access error", "remote operation error",
	"transport retry counter exceeded", "RNR retry counter exceeded", "local RDD violation error",
	"remote invalid RD request", "operation aborted", "invalid EE context number", "invalid EE context state",
	"fatal error", "response timeout error", "general error"}

// WCFlushErr is IB_WC_WR_FLUSH_ERR: a request flushed from a QP in ERR.
const WCFlushErr WCStatus = 5

func (s WCStatus) String() string {
	return wcStatusNames.name(int(s), fmt.Sprintf("STATUS_%d", uint8(s)))
}

// Message is the kernel's ib_wc_status_msg() of the status.
func (s WCStatus) Message() string { return wcStatusMsgs.name(int(s), "unrecognized status") }

// ParseWCStatus parses a status name such as "RETRY_EXC_ERR" (IB_WC_ or
// IBV_WC_ may precede it).
func ParseWCStatus(s string) (WCStatus, error) {
	for _, p := range []string{"IB_WC_", "IBV_WC_", "ib_wc_", "ibv_wc_"} {
		if len(s) > len(p) && s[:len(p)] == p {
			s = s[len(p):]
			break
		}
	}
	v, err := wcStatusNames.parse("work completion status", s)
	return WCStatus(v), err
}

// QPErrorReport is what a qp-error event reports.
type QPErrorReport uint8

const (
	QPErrNone   QPErrorReport = iota
	QPErrDriver               // the driver moved the QP to ERR itself
	QPErrFirst                // the QP's first error completion (its status in WCStatus)
	QPErrTotal                // at the QP's destroy: Count of its completions had WCStatus
)

var qpErrNames = names{"", "driver", "first", "total"}

func (r QPErrorReport) String() string { return qpErrNames.name(int(r), "") }

// ParseQPErrorReport parses "driver", "first" or "total".
func ParseQPErrorReport(s string) (QPErrorReport, error) {
	v, err := qpErrNames.parse("qp-error report", s)
	return QPErrorReport(v), err
}

// Fault is what an asynchronous event (EvAsync) or a QP error
// (EvQPError) says beyond the resource it is about.
type Fault struct {
	IBEvent IBEvent // EvAsync
	// Report says which QP error this is: the driver's move to ERR, the
	// first error completion, or the count at the QP's destroy.
	Report   QPErrorReport
	WCStatus WCStatus // EvQPError (first, total): the completions' status
	Count    uint64   // EvQPError (first: 1; total: how many)
	// Peer is the remote end of a QP as its driver keeps it: the GID of
	// its primary path (an IPv4-mapped address on RoCEv2) and the remote
	// QP number. Invalid GID: not known.
	PeerGID netip.Addr
	PeerQPN uint32
	// OnPort are the live objects on a port event's port and their
	// owners, as an enrichment found them ("2 QP, 2 CQ of rping[212]");
	// nil when not looked up.
	OnPort []string
}

// HasPeer says whether the event names its QP's peer.
func (f *Fault) HasPeer() bool { return f.PeerGID.IsValid() }

// IsPortEvent says whether an async event is about a port or a device
// rather than an object (a WQ, which restrack does not track, has its
// address in Obj).
func (e *Event) IsPortEvent() bool { return e.Kind == EvAsync && !e.Has(EvHasRes) && e.Obj == 0 }
