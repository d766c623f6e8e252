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
	// and number, the status text as logged, the CQE syndrome it stands
	// for (HasSyndrome false for "unrecognized status" and texts not known
	// here) and the completion status mlx5 reports for that syndrome
	// (HasWCStatus false for one it does not define), and the vendor's
	// syndrome and the hardware's syndrome type and error.
	Port           uint32
	QPN            uint32
	StatusMsg      string
	Syndrome       uint8
	HasSyndrome    bool
	WCStatus       WCStatus
	HasWCStatus    bool
	VendorSyndrome uint32
	HWSyndromeType uint32
	HWSyndrome     uint32
	// QP is the recording's QP the report is about (its create or
	// snapshot, with its owner), when a recording was joined and named
	// one.
	QP *Event
}

// mlx5 prints the syndrome with ib_wc_status_msg(syndrome), but the
// syndrome is the error CQE's (MLX5_CQE_SYNDROME_*), not an ib_wc_status:
// the text is the status whose number the syndrome has, right for 0x1 to
// 0x6 only. mlx5SyndromeStatus is the status mlx5 gives each syndrome in
// a completion (mlx5_handle_error_cqe, drivers/infiniband/hw/mlx5/cq.c).
var mlx5SyndromeStatus = map[uint8]WCStatus{0x01: 1, 0x02: 2, 0x04: 4, 0x05: 5, 0x06: 6, 0x10: 7, 0x11: 8, 0x12: 9,
	0x13: 10, 0x14: 11, 0x15: 12, 0x16: 13, 0x22: 16}

// MLX5SyndromeOfMessage reads the CQE syndrome back from the text mlx5
// printed for it (ib_wc_status_msg of the syndrome's number); false for
// "unrecognized status" (0x16 and above) and any text it does not print.
func MLX5SyndromeOfMessage(msg string) (uint8, bool) {
	for i, m := range wcStatusMsgs {
		if m == msg {
			return uint8(i), true
		}
	}
	return 0, false
}

// MLX5SyndromeStatus is the completion status mlx5 reports for a CQE
// syndrome; false for a syndrome it does not define.
func MLX5SyndromeStatus(syndrome uint8) (WCStatus, bool) {
	st, ok := mlx5SyndromeStatus[syndrome]
	return st, ok
}

// SyndromeSentence says what a QP error syndrome report says, in words:
// "mlx5_0/1 QP 137: remote access error (CQE syndrome 0x13, logged as
// "fatal error"; vendor syndrome 0x41, hw 0x0/0x0)", then what the status
// means in practice where known. The device and the status text are as
// logged: escape them to show them.
func (r *KernelReport) SyndromeSentence() string {
	var what, cqe string
	switch {
	case r.HasWCStatus:
		what = r.WCStatus.Message()
		cqe = fmt.Sprintf("CQE syndrome 0x%x", r.Syndrome)
	case r.HasSyndrome:
		what = "an error mlx5 does not define"
		cqe = fmt.Sprintf("CQE syndrome 0x%x", r.Syndrome)
	default:
		what = "an error of CQE syndrome 0x16 or above"
		cqe = "the kernel could not name it"
	}
	if what != r.StatusMsg && r.StatusMsg != "unrecognized status" {
		cqe += fmt.Sprintf(", logged as %q", r.StatusMsg)
	}
	s := fmt.Sprintf("%s/%d QP %d: %s (%s; vendor syndrome 0x%x, hw 0x%x/0x%x)", r.Device, r.Port, r.QPN, what, cqe,
		r.VendorSyndrome, r.HWSyndromeType, r.HWSyndrome)
	if r.HasWCStatus {
		if m := wcMeanings[r.WCStatus]; m != "" {
			s += ": " + m
		}
	}
	return s
}
