package rdma

import (
	"fmt"
	"strconv"
	"time"
)

// KernelReportKind is what a kernel log report says.
type KernelReportKind uint8

const (
	KernRestrackNamed   KernelReportKind = iota + 1 // "restrack: ... object allocated by X is not freed"
	KernRestrackWarning                             // WARNING at restrack.c: objects left, unnamed
	KernDriverWarning                               // WARNING at rxe_pool.c: the driver's objects left
	KernHungUnregister                              // a task blocked in a device unregistration
	KernQPErrSyndrome                               // mlx5: "DEV/PORT: QP N error: STATUS (0xV 0xT 0xE)"
)

func (k KernelReportKind) String() string {
	switch k {
	case KernRestrackNamed:
		return "restrack-named"
	case KernRestrackWarning:
		return "restrack-warning"
	case KernDriverWarning:
		return "driver-warning"
	case KernHungUnregister:
		return "hung-unregister"
	case KernQPErrSyndrome:
		return "qp-error-syndrome"
	}
	return "kind-" + strconv.Itoa(int(k))
}

// Frame is one function of a call trace.
type Frame struct{ Func, Module string }

// KernelReport is one report of a resource leak or a hung device removal
// found in a kernel log (package kernlog reads them).
type KernelReport struct {
	Kind   KernelReportKind
	Source string
	Line   int // of its first line
	// Stamp is the line's time as written; Seconds the dmesg time since
	// boot when the log has it.
	Stamp      string
	Seconds    float64
	HasSeconds bool
	// Wall is the line's wall-clock time where its stamp has one (dmesg
	// -T, journalctl), in the zone the reader was given when the stamp
	// names none; WallNoYear: journalctl's short form gives no year
	// (Wall's is 0).
	Wall       time.Time
	HasWall    bool
	WallNoYear bool
	// Named form: the device (empty when the log does not say), the
	// object's type, and its owner: the module (Owner.KernName) of a
	// kernel object, the process name (Owner.Comm) of a user one. The
	// kernel names no pid.
	Device string
	Res    ResType
	Owner  Owner
	// WARNING and hung task: the task that hit it.
	Task string
	PID  int
	// WARNING: where.
	Location string // "drivers/infiniband/core/restrack.c:52"
	Function string // "rdma_restrack_clean"
	// Hung task: how long, and the innermost RDMA function it waits in.
	BlockedSecs int
	WaitsIn     string
	Frames      []Frame
	MoreFrames  int
	Truncated   bool
	// QP error syndrome: Device, the QP's port (0 when it was never set)
	// and number, the completion status its syndrome names (HasWCStatus
	// false when the kernel printed "unrecognized status" or a text not
	// known here), that text as logged, and the vendor's syndrome and the
	// hardware's syndrome type and error.
	Port           uint32
	QPN            uint32
	WCStatus       WCStatus
	HasWCStatus    bool
	StatusMsg      string
	VendorSyndrome uint32
	HWSyndromeType uint32
	HWSyndrome     uint32
	// QP is the recording's QP the report is about (its create or
	// snapshot, with its owner), when a recording was joined and named
	// one.
	QP *Event
}

// WCStatusOfMessage maps ib_wc_status_msg()'s text back to the status;
// false for "unrecognized status" and any text it does not print.
func WCStatusOfMessage(msg string) (WCStatus, bool) {
	for i, m := range wcStatusMsgs {
		if m == msg {
			return WCStatus(i), true
		}
	}
	return 0, false
}

// SyndromeSentence says what a QP error syndrome report says, in words:
// "mlx5_0/1 QP 137: local protection error (vendor syndrome 0x41, hw
// 0x0/0x0)", then what the status means in practice where known. The
// device and the status text are as logged: escape them to show them.
func (r *KernelReport) SyndromeSentence() string {
	s := fmt.Sprintf("%s/%d QP %d: %s (vendor syndrome 0x%x, hw 0x%x/0x%x)", r.Device, r.Port, r.QPN, r.StatusMsg,
		r.VendorSyndrome, r.HWSyndromeType, r.HWSyndrome)
	if r.HasWCStatus {
		if m := wcMeanings[r.WCStatus]; m != "" {
			s += ": " + m
		}
	}
	return s
}
