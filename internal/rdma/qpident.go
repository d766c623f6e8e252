package rdma

import (
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// QPIdentity is who a QP is, across hosts: where it lives (node, device,
// port, local GID), its number and type, who owns it, whom it is connected
// to (remote GID and QPN), and how its life went and ended. A QPN is
// reused once its QP is gone, so one QP's lifetime is named by (Node, Dev,
// QPN, Created). A node sends one such record at each change that matters
// (Change); each record is whole, so that any one of them answers "who
// held this QPN", and the last says the most.
type QPIdentity struct {
	Node string // the node's name (its host name, or the Kubernetes node's)
	Dev  string
	Port uint32 // 0: not bound to a port yet

	QPN  uint32
	Type QPType
	// Created is when the QP was created. For a QP that existed when the
	// node began watching, it is when it was first seen, and CreatedSeen
	// says so: such a QP was created at or before Created.
	Created     time.Time
	CreatedSeen bool

	State QPState // its state as of Time

	// LocalGID is the GID the QP sends from (invalid: not known); for
	// RoCE v2 over IPv4 an IPv4-mapped GID (LocalGID.Is4In6()).
	LocalGID netip.Addr
	// RemoteGID and RemoteQPN are its peer's, once it was connected
	// (RTR); RemoteGID is invalid and HasRemoteQPN false while unknown.
	RemoteGID    netip.Addr
	RemoteQPN    uint32
	HasRemoteQPN bool

	Owner Owner

	// Transitions are its state changes that matter (to RTR, RTS, SQD,
	// SQE, ERR), oldest first, at most MaxTransitions of them.
	Transitions []QPTransition

	Change QPChange  // what this record reports
	Time   time.Time // when that happened

	// Fate is how its life ended (FateAlive while it lives); Ended is
	// when, ExitCode and Signal what became of its owner when the owner's
	// end took the QP with it (FateOwnerExit, FateSignal).
	Fate     QPFate
	Ended    time.Time
	ExitCode int
	HasExit  bool // ExitCode is known
	Signal   int  // FateSignal: the signal that killed the owner
}

// QPTransition is one state change of a QP.
type QPTransition struct {
	State QPState
	At    time.Time
}

// MaxTransitions bounds the state changes a record carries: a QP moved
// back and forth keeps its first ones (how it came up) and its last one.
const MaxTransitions = 8

// AddTransition records a move to s at t: a state that matters (RTR, RTS,
// SQD, SQE, ERR) and differs from the last one recorded.
func (q *QPIdentity) AddTransition(s QPState, t time.Time) bool {
	switch s {
	case QPStateRTR, QPStateRTS, QPStateSQD, QPStateSQE, QPStateErr:
	default:
		return false
	}
	if n := len(q.Transitions); n > 0 && q.Transitions[n-1].State == s {
		return false
	}
	if len(q.Transitions) == MaxTransitions {
		q.Transitions[MaxTransitions-1] = QPTransition{s, t}
		return true
	}
	q.Transitions = append(q.Transitions, QPTransition{s, t})
	return true
}

// Connected says whether the QP was ever moved to RTR (its peer set).
func (q *QPIdentity) Connected() bool {
	for _, t := range q.Transitions {
		if t.State == QPStateRTR {
			return true
		}
	}
	return false
}

// Holds says whether this lifetime held its QPN at t: created at or
// before t and not ended before it. A QP first seen alive at Created
// (CreatedSeen) may have been created earlier: it is said to hold t from
// Created on only.
func (q *QPIdentity) Holds(t time.Time) bool {
	if t.Before(q.Created) {
		return false
	}
	return q.Fate == FateAlive || !q.Ended.Before(t)
}

// QPChange is what a QP identity record reports.
type QPChange uint8

const (
	QPCreated   QPChange = iota + 1 // the QP was created
	QPExists                        // it existed when the node began watching
	QPConnected                     // it was moved to RTR: its peer is known
	QPFailed                        // it was moved to ERR (or SQE)
	QPEnded                         // it is gone: Fate says how
	numQPChanges
)

var qpChangeNames = [numQPChanges]string{"", "created", "exists", "connected", "failed", "ended"}

func (c QPChange) String() string {
	if c > 0 && c < numQPChanges {
		return qpChangeNames[c]
	}
	return "change-" + strconv.Itoa(int(c))
}

// ParseQPChange reads a name String gives.
func ParseQPChange(s string) (QPChange, bool) {
	for c := QPCreated; c < numQPChanges; c++ {
		if qpChangeNames[c] == s {
			return c, true
		}
	}
	return 0, false
}

// QPFate is how a QP's life ended, as its node saw it.
type QPFate uint8

const (
	FateAlive         QPFate = iota // not ended (as of the record)
	FateDestroyed                   // destroyed by its owner
	FateOwnerExit                   // freed by the kernel when its owner exited (ExitCode when known)
	FateSignal                      // freed by the kernel when its owner was killed by a signal (Signal)
	FateFileClose                   // freed when its owner closed its device file, still running
	FateDeviceRemoved               // freed by the kernel while its device was being removed
	numQPFates
)

var qpFateNames = [numQPFates]string{"alive", "destroyed", "owner-exit", "signal", "file-close", "device-removed"}

func (f QPFate) String() string {
	if f < numQPFates {
		return qpFateNames[f]
	}
	return "fate-" + strconv.Itoa(int(f))
}

// ParseQPFate reads a name String gives.
func ParseQPFate(s string) (QPFate, bool) {
	for f := FateAlive; f < numQPFates; f++ {
		if qpFateNames[f] == s {
			return f, true
		}
	}
	return 0, false
}

// signalNames are Linux's x86 and arm64 signal numbers 1 to 31.
var signalNames = [...]string{"", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
	"SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",
	"SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH",
	"SIGIO", "SIGPWR", "SIGSYS"}

// SignalName names a Linux signal number: SIGKILL, or SIGRTMIN+N, or
// "signal N" for one out of range.
func SignalName(sig int) string {
	switch {
	case sig > 0 && sig < len(signalNames):
		return signalNames[sig]
	case sig >= 34 && sig <= 64:
		return "SIGRTMIN+" + strconv.Itoa(sig-34)
	}
	return "signal " + strconv.Itoa(sig)
}

// ParseSignalName reads a name SignalName gives.
func ParseSignalName(s string) (int, bool) {
	for i := 1; i < len(signalNames); i++ {
		if signalNames[i] == s {
			return i, true
		}
	}
	if rest, ok := strings.CutPrefix(s, "SIGRTMIN+"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n <= 30 {
			return 34 + n, true
		}
	}
	if rest, ok := strings.CutPrefix(s, "signal "); ok {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 {
			return n, true
		}
	}
	return 0, false
}

// ExitStatus is how a process ended, as the kernel's exit code has it
// (task_struct.exit_code, what wait(2) reads): a signal in the low seven
// bits, else the exit status in the next eight.
type ExitStatus struct {
	PID  uint32 // the process (thread-group id)
	Time time.Time
	Code uint32 // the raw exit code
}

// Signaled says whether a signal killed the process, and which.
func (x ExitStatus) Signaled() (int, bool) {
	if sig := int(x.Code & 0x7f); sig != 0 && sig != 0x7f {
		return sig, true
	}
	return 0, false
}

// Status is the exit status of a process that exited by itself.
func (x ExitStatus) Status() int { return int(x.Code>>8) & 0xff }

// GIDRecord is one entry of a node's GID table as the node reports it,
// so that a GID seen on the wire (an IPv4-mapped GID, an IB GID) names
// the node, device and port it belongs to.
type GIDRecord struct {
	Node string
	GIDEntry
	Time time.Time // when the node read it
}
