package rdma

import (
	"fmt"
	"strings"
	"time"
)

// EventKind is what happened to a resource, a connection or a device.
type EventKind uint8

const (
	EvNone            EventKind = iota
	EvCreate                    // the kernel started tracking the resource (rdma_restrack_add)
	EvDestroy                   // the resource is gone (rdma_restrack_del, or commit_del)
	EvDestroyBegin              // destruction of a PD, CQ, QP or SRQ started
	EvDestroyAbort              // ... and failed in the driver; the resource stays
	EvModify                    // a QP changed state
	EvCMIDCreate                // an rdma_cm ID was created (before any device is bound)
	EvCMEventHandler            // rdma_cma:cm_event_handler: an event delivered to the ID's owner
	EvCMEventDone               // rdma_cma:cm_event_done
	EvCMReqHandler              // rdma_cma:cm_req_handler: a connect request arrived
	EvCMSendReq                 // rdma_cma:cm_send_req
	EvCMSendRep                 // rdma_cma:cm_send_rep
	EvCMSendRTU                 // rdma_cma:cm_send_rtu
	EvCMSendRej                 // rdma_cma:cm_send_rej
	EvCMSendMRA                 // rdma_cma:cm_send_mra
	EvCMDisconnect              // rdma_cma:cm_disconnect
	EvCMSentDreq                // rdma_cma:cm_sent_dreq
	EvCMSentDrep                // rdma_cma:cm_sent_drep
	EvCMIDAttach                // rdma_cma:cm_id_attach: the ID was bound to a device
	EvCMIDDestroy               // rdma_cma:cm_id_destroy
	EvCMQPCreate                // rdma_cma:cm_qp_create
	EvCMQPDestroy               // rdma_cma:cm_qp_destroy
	EvDevRegister               // a device was registered
	EvDevUnregister             // a device's unregistration began
	EvDevUnregistered           // a device's unregistration finished
	EvExists                    // the resource existed when tracing started (netlink snapshot)
	EvSpan                      // a kernel function behind a verb or an rdma_cm step ran: Span (Mono is its start)
	EvOffCPU                    // a followed thread was off CPU: Mono is when it left, OffCPU how long and who ran instead
	EvPortBusy                  // PortBusy.Op (rdma_listen, rdma_connect, bind) got EADDRINUSE on Src; Holders who held it
	EvSMCFallback               // an SMC socket (Inode) fell back to TCP on Src>Dst; Status is the reason (SMC_CLC_DECL_*)
	EvSMCLinkCreate             // an SMC-R link's QP (LQPN) was created on DevName/Port; SMC says which link; Status is the creation's
	EvSMCLinkDown               // smc:smcr_link_down: an SMC-R link went down
	EvSMCLinkDestroy            // an SMC-R link's QP is being destroyed
	EvCMListen                  // rdma_listen succeeded: the ID (a wildcard's per-device child too) is in LISTEN
	// The RDMA netlink monitor group's device events (Linux 6.12+), and
	// the same found by comparing two dumps (EvPolled).
	EvNetdevAttach // a port (Port) got its net device (Netdev)
	EvNetdevDetach // a port lost its net device
	EvDevRename    // a device was renamed: DevName is its new name
	EvNetdevRename // a port's net device was renamed: Netdev is its new name
	EvQPAttr       // a modify set a QP's timeouts, retries, path MTU or address vector: QPAttr
	EvAsync        // an IB asynchronous event (Fault.IBEvent) of a port, a device or an object
	EvQPError      // a QP's driver moved it to ERR, or its error completions (Fault)
	EvCallFail     // a create or an rdma_cm step failed inside the call, creating nothing (CallFail)
	EvGIDChange    // a GID was added to or deleted from a port's GID table (GID)
	numEventKinds
)

var eventKindNames = [numEventKinds]string{"", "create", "destroy", "destroy_begin", "destroy_abort", "modify",
	"cm_id_create", "cm_event_handler", "cm_event_done", "cm_req_handler", "cm_send_req", "cm_send_rep",
	"cm_send_rtu", "cm_send_rej", "cm_send_mra", "cm_disconnect", "cm_sent_dreq", "cm_sent_drep",
	"cm_id_attach", "cm_id_destroy", "cm_qp_create", "cm_qp_destroy", "dev_register", "dev_unregister",
	"dev_unregistered", "exists", "span", "off-cpu", "port-busy", "smc-fallback",
	"smc-link-create", "smc-link-down", "smc-link-destroy", "cm_listen",
	"netdev-attach", "netdev-detach", "dev-rename", "netdev-rename", "qp-attr",
	"async", "qp-error", "call-fail", "gid-change"}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && k != EvNone {
		return eventKindNames[k]
	}
	return fmt.Sprintf("event-%d", uint8(k))
}

// ParseEventKind parses an event name; "cm" names every rdma_cma event.
func ParseEventKind(s string) ([]EventKind, error) {
	s = strings.ToLower(s)
	var out []EventKind
	for k := EvCreate; k < numEventKinds; k++ {
		if k.String() == s || (s == "cm" && strings.HasPrefix(k.String(), "cm_")) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unknown event %q: valid events are %s, or cm for all rdma_cm events", s, strings.Join(eventKindNames[1:], ", "))
	}
	return out, nil
}

// EventFlag says which optional fields of an Event are set.
type EventFlag uint16

// What the event says of its resource is the resource's own presence
// (Resource.Has, read with Given): HasPort, HasLQPN (with the QP type),
// HasState, HasSrcAddr (with the port space; Dst when valid).
const (
	EvHasRes EventFlag = 1 << iota
	EvHasDev
	EvHasOwner
	EvHasPrevState
	EvHasCM
	EvUser // a user-space object
	// EvActorExiting: the acting task was exiting. A destroy with it is
	// the kernel's cleanup at process exit, not one the program asked for.
	EvActorExiting
	// EvFileClose: it happened inside the release of a uverbs or rdma_cm
	// file (ib_uverbs_close, ucma_close): cleanup of what a closed file held.
	EvFileClose
	EvHasSize   // Size is set: an MR's length, ib_umem_get's size
	EvPreempted // off-cpu: the thread was runnable when switched out (preempted), not asleep
	EvHasDur    // the length is set: Span.Dur (span), OffCPU.Dur (off-cpu)
	// EvPolled: not traced but found by comparing two netlink dumps
	// (trace without BPF): its time is the later dump's, and what
	// changed between the two dumps and back again was not seen.
	EvPolled
)

// Cleanup names how a destroy came about: "exit" (the kernel's cleanup when
// the owner exited), "close" (the owner closed its device file with the
// object still in it), or "" (an explicit destroy).
func (e *Event) Cleanup() string {
	switch {
	case e.Has(EvActorExiting):
		return "exit"
	case e.Has(EvFileClose):
		return "close"
	}
	return ""
}

// Event is one thing that happened, as the tracer saw it: the resource it
// is about (Resource, with what a netlink dump would say of it) and the
// parts of its kind (Span, PortBusy, OffCPU, SMC, QPAttr, Fault), each set
// only for its kinds: no field means one thing for one kind and another
// for the next.
type Event struct {
	Mono  uint64    // CLOCK_MONOTONIC, ns
	Time  time.Time // wall clock
	Kind  EventKind
	Flags EventFlag

	// Resource is the object the event is about: its type (EvHasRes),
	// device (EvHasDev), owner (EvHasOwner; Owner.KernName for kernel
	// objects), and with their presence bits in Resource.Has its port,
	// QP number and type, rdma_cm port space and addresses, and state
	// (QPState or CMState by Type). Event.Has reads the event's flags;
	// the resource's bits are e.Resource.Has, read with e.Given.
	Resource
	ID uint32 // restrack id (cm-idn, cqn, pdn, ...); 0 before the kernel assigns it
	// PrevState is the QPState or CMState before a modify (EvHasPrevState).
	PrevState uint8
	CMEvent   CMEvent
	Status    int32

	Actor  Owner  // the task that was running (may be a kworker)
	Cgroup uint64 // the actor's cgroup v2 id
	// OwnerCgroup is the cgroup v2 id of the owner task (res->task) when
	// the event happened; 0 for kernel objects and netlink snapshots.
	OwnerCgroup uint64
	Obj         uint64 // kernel address of the object: identity across its events

	Size uint64 // bytes (EvHasSize)

	// The parts are named fields, none embedded: a part's field is read
	// as e.Part.Field, never as if every event had it (e.Dur).
	Span        Span        // EvSpan
	PortBusy    PortBusy    // EvPortBusy
	OffCPU      OffCPU      // EvOffCPU
	SMCFallback SMCFallback // EvSMCFallback
	// SMC is the link of an EvSMCLink* event.
	SMC SMCLink
	// QPAttr is what an EvQPAttr event set: a QP's transport settings.
	QPAttr QPAttr
	// Fault is an async event's or a QP error's (EvAsync, EvQPError).
	Fault Fault
	// CallFail is what an EvCallFail says: the call, its errno, what it
	// asked, the device's limits, the limit that refused it.
	CallFail CallFail
	// GID is an EvGIDChange's GID table entry.
	GID   GIDChange
	Stack *CallStack // a user object's create: where in its program it was made (--stacks); nil: not known
}

// Span is what an EvSpan says beyond its start (Mono) and the resource.
type Span struct {
	Func string // the kernel function, e.g. ib_uverbs_reg_mr
	Dur  uint64 // ns (EvHasDur)
}

// PortBusy is what an EvPortBusy event says beyond the address (Src).
type PortBusy struct {
	Op string // the operation that got EADDRINUSE: rdma_listen, rdma_connect, bind
	// Holders are who held the port when it was reported ("rping[172]
	// iwarp LISTEN 10.99.1.1:7400"); nil when not looked up (a recording,
	// or more lookups than the tracer's budget allows).
	Holders []string
	// Suppressed is how many port-busy events of the same process the
	// kernel's rate limit held back since the last one shown.
	Suppressed uint32
}

// OffCPU is what an EvOffCPU spell says beyond its start (Mono);
// EvPreempted says whether the thread was runnable when it left.
type OffCPU struct {
	Dur  uint64 // ns off CPU (EvHasDur)
	Wait uint64 // ns from its wakeup to running again (0: unknown)
	// Next is the task that ran in its place (tid and comm; tid 0 is the
	// idle task): the longest runner of a spell preempted and resumed on
	// one CPU that no sibling's spell was counting on, else the first.
	Next Owner
}

// SMCFallback is the socket of an EvSMCFallback (the event's Status is
// the reason, SMC_CLC_DECL_*): its inode, how its process is found.
type SMCFallback struct {
	Inode uint64
}

// SMCLink is an SMC-R link as its events carry it: which link of which
// link group (the QP, device and port are the event's LQPN, DevName and
// Port).
type SMCLink struct {
	LGR    uint32 // the link group's id, as SMC's netlink gives it
	Role   string // client or server: the side that made the link group
	ID     uint8  // the link's id within its group
	State  string // unused, inactive, activating, active
	HasLGR bool   // LGR and Role are set (a link always has a group; a record may not)
}

// SMCLinkStates name enum smc_link_state.
var SMCLinkStates = []string{"unused", "inactive", "activating", "active"}

// LGRID is a link group id as smc-tools print it.
func LGRID(id uint32) string { return fmt.Sprintf("%08x", id) }

// IsSMCLink says whether k is one of the SMC-R link events.
func (k EventKind) IsSMCLink() bool {
	return k == EvSMCLinkCreate || k == EvSMCLinkDown || k == EvSMCLinkDestroy
}

// End is when the event's span or spell ended (Mono for instant events).
func (e *Event) End() uint64 { return e.Mono + e.Length() }

// Length is how long a span (Span.Dur) or an off-CPU spell (OffCPU.Dur)
// lasted, in ns, for what treats both as slices of time; 0 for the
// instant kinds.
func (e *Event) Length() uint64 {
	switch e.Kind {
	case EvSpan:
		return e.Span.Dur
	case EvOffCPU:
		return e.OffCPU.Dur
	}
	return 0
}

// Has reports whether all of f are set.
func (e *Event) Has(f EventFlag) bool { return e.Flags&f == f }

// StateName names State (or PrevState with prev) for the event's resource type.
func (e *Event) StateName(prev bool) string {
	s := e.State()
	if prev {
		s = e.PrevState
	}
	if e.Type == ResCMID {
		return CMState(s).String()
	}
	return QPState(s).String()
}

// State is the resource's QPState or CMState (by Type) as a number.
func (e *Event) State() uint8 {
	if e.Type == ResCMID {
		return uint8(e.CMState)
	}
	return uint8(e.QPState)
}

// SetState sets QPState or CMState (by Type) and its presence bit.
func (e *Event) SetState(s uint8) {
	if e.Type == ResCMID {
		e.CMState = CMState(s)
	} else {
		e.QPState = QPState(s)
	}
	e.Resource.Has |= HasState
}
