package rdma

import "strconv"

// KernelReportKind is what a kernel log report says.
type KernelReportKind uint8

const (
	KernRestrackNamed   KernelReportKind = iota + 1 // "restrack: ... object allocated by X is not freed"
	KernRestrackWarning                             // WARNING at restrack.c: objects left, unnamed
	KernDriverWarning                               // WARNING at rxe_pool.c: the driver's objects left
	KernHungUnregister                              // a task blocked in a device unregistration
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
}
