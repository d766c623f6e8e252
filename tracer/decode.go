// Package tracer loads rdmatrace's eBPF programs, attaches each hook with
// the best variant this kernel allows (reporting what it skipped and why),
// reads the ring buffer, counts what the kernel had to drop, and decodes
// records into rdma.Event values.
package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Layout of struct event in bpf/rdmatrace.bpf.c; TestRecordLayout checks it
// against the bpf2go-generated type.
const (
	offTS       = 0
	offCgroup   = 8
	offObj      = 16
	offKind     = 24
	offFlags    = 28
	offDevIndex = 32
	offPort     = 36
	offID       = 40
	offQPN      = 44
	offOwnerPID = 48
	offOwnerTID = 52
	offActorPID = 56
	offActorTID = 60
	offCMEvent  = 64
	offStatus   = 68
	offPS       = 72
	offCMTP     = 76
	offResType  = 80
	offQPType   = 81
	offOldState = 82
	offNewState = 83
	offSuppress = 84
	offDevName  = 88
	offOwnComm  = 152
	offKernName = 168
	offActComm  = 200
	offSrc      = 216
	offDst      = 244
	offOwnerCg  = 272
	addrLen     = 28
	// Spans and off-CPU spells.
	offDur      = 280
	offSize     = 288
	offWait     = 296
	offFunc     = 304
	offNextPID  = 308
	offNextComm = 312
	recordSize  = 328
	// oldRecordSize is the record before owner_cgroup and the span fields
	// were added: raw recordings (--record-raw, testdata/tracer) made then
	// still decode, with OwnerCgroup 0 and no spans.
	oldRecordSize = offOwnerCg
)

// The C side's enums, as bpf2go generates them from rdmatrace.bpf.c: the
// object and this decoder cannot disagree on a number.
const (
	cResAdd          = bpf.RdmatraceEventKindEV_RES_ADD
	cResDel          = bpf.RdmatraceEventKindEV_RES_DEL
	cResBeginDel     = bpf.RdmatraceEventKindEV_RES_BEGIN_DEL
	cResCommitDel    = bpf.RdmatraceEventKindEV_RES_COMMIT_DEL
	cResAbortDel     = bpf.RdmatraceEventKindEV_RES_ABORT_DEL
	cQPState         = bpf.RdmatraceEventKindEV_QP_STATE
	cCMIDCreate      = bpf.RdmatraceEventKindEV_CM_ID_CREATE
	cCM              = bpf.RdmatraceEventKindEV_CM
	cDevRegister     = bpf.RdmatraceEventKindEV_DEV_REGISTER
	cDevUnregister   = bpf.RdmatraceEventKindEV_DEV_UNREGISTER
	cDevUnregistered = bpf.RdmatraceEventKindEV_DEV_UNREGISTERED
	cSpan            = bpf.RdmatraceEventKindEV_SPAN
	cOffCPU          = bpf.RdmatraceEventKindEV_OFF_CPU
	cPortBusy        = bpf.RdmatraceEventKindEV_PORT_BUSY
	cSMCFallback     = bpf.RdmatraceEventKindEV_SMC_FALLBACK
	cSMCLinkCreate   = bpf.RdmatraceEventKindEV_SMC_LINK_CREATE
	cSMCLinkDown     = bpf.RdmatraceEventKindEV_SMC_LINK_DOWN
	cSMCLinkDestroy  = bpf.RdmatraceEventKindEV_SMC_LINK_DESTROY

	cfUser      = bpf.RdmatraceEventFlagF_USER
	cfHasDev    = bpf.RdmatraceEventFlagF_HAS_DEV
	cfHasOwner  = bpf.RdmatraceEventFlagF_HAS_OWNER
	cfHasState  = bpf.RdmatraceEventFlagF_HAS_STATE
	cfHasQP     = bpf.RdmatraceEventFlagF_HAS_QP
	cfHasCM     = bpf.RdmatraceEventFlagF_HAS_CM
	cfHasAddr   = bpf.RdmatraceEventFlagF_HAS_ADDR
	cfExiting   = bpf.RdmatraceEventFlagF_EXITING
	cfClosing   = bpf.RdmatraceEventFlagF_CLOSING
	cfHasSize   = bpf.RdmatraceEventFlagF_HAS_SIZE
	cfPreempted = bpf.RdmatraceEventFlagF_PREEMPTED
)

// spanFuncs names the C side's enum span_func: the kernel functions timed.
var spanFuncs = [...]string{
	bpf.RdmatraceSpanFuncSPAN_RDMA_RESOLVE_ADDR:      "rdma_resolve_addr",
	bpf.RdmatraceSpanFuncSPAN_RDMA_RESOLVE_ROUTE:     "rdma_resolve_route",
	bpf.RdmatraceSpanFuncSPAN_RDMA_CONNECT_LOCKED:    "rdma_connect_locked",
	bpf.RdmatraceSpanFuncSPAN_UCMA_GET_EVENT:         "ucma_get_event",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_REG_MR:       "ib_uverbs_reg_mr",
	bpf.RdmatraceSpanFuncSPAN_IB_UMEM_GET:            "ib_umem_get",
	bpf.RdmatraceSpanFuncSPAN_IB_DEREG_MR_USER:       "ib_dereg_mr_user",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_ALLOC_PD:     "ib_uverbs_alloc_pd",
	bpf.RdmatraceSpanFuncSPAN_UVERBS_CQ_CREATE:       "ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE",
	bpf.RdmatraceSpanFuncSPAN_UVERBS_QP_CREATE:       "ib_uverbs_handler_UVERBS_METHOD_QP_CREATE",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_CREATE_CQ:    "ib_uverbs_create_cq",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_EX_CREATE_CQ: "ib_uverbs_ex_create_cq",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_CREATE_QP:    "ib_uverbs_create_qp",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_EX_CREATE_QP: "ib_uverbs_ex_create_qp",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_MODIFY_QP:    "ib_uverbs_modify_qp",
	bpf.RdmatraceSpanFuncSPAN_IB_UVERBS_EX_MODIFY_QP: "ib_uverbs_ex_modify_qp",
}

// portOps names the C side's enum port_op: what got EADDRINUSE (func of
// a port-busy event), and whether an rdma_cm ID did.
var portOps = [...]struct {
	name string
	cm   bool
}{
	bpf.RdmatracePortOpPORT_RDMA_LISTEN:  {"rdma_listen", true},
	bpf.RdmatracePortOpPORT_RDMA_CONNECT: {"rdma_connect", true},
	bpf.RdmatracePortOpPORT_INET_BIND:    {"bind", false},
	bpf.RdmatracePortOpPORT_INET6BIND:    {"bind", false},
}

const stateUnknown = 0xff

// cmKinds maps the C side's rdma_cma tracepoint (enum cm_tp) to the event kind.
var cmKinds = [...]rdma.EventKind{
	bpf.RdmatraceCmTpCM_TP_EVENT_HANDLER: rdma.EvCMEventHandler,
	bpf.RdmatraceCmTpCM_TP_EVENT_DONE:    rdma.EvCMEventDone,
	bpf.RdmatraceCmTpCM_TP_REQ_HANDLER:   rdma.EvCMReqHandler,
	bpf.RdmatraceCmTpCM_TP_SEND_REQ:      rdma.EvCMSendReq,
	bpf.RdmatraceCmTpCM_TP_SEND_REP:      rdma.EvCMSendRep,
	bpf.RdmatraceCmTpCM_TP_SEND_RTU:      rdma.EvCMSendRTU,
	bpf.RdmatraceCmTpCM_TP_SEND_REJ:      rdma.EvCMSendRej,
	bpf.RdmatraceCmTpCM_TP_SEND_MRA:      rdma.EvCMSendMRA,
	bpf.RdmatraceCmTpCM_TP_DISCONNECT:    rdma.EvCMDisconnect,
	bpf.RdmatraceCmTpCM_TP_SENT_DREQ:     rdma.EvCMSentDreq,
	bpf.RdmatraceCmTpCM_TP_SENT_DREP:     rdma.EvCMSentDrep,
	bpf.RdmatraceCmTpCM_TP_ID_ATTACH:     rdma.EvCMIDAttach,
	bpf.RdmatraceCmTpCM_TP_ID_DESTROY:    rdma.EvCMIDDestroy,
	bpf.RdmatraceCmTpCM_TP_QP_CREATE:     rdma.EvCMQPCreate,
	bpf.RdmatraceCmTpCM_TP_QP_DESTROY:    rdma.EvCMQPDestroy,
}

// Decoder turns ring buffer records into events. It keeps the strings it
// has seen (device names, comms, module names), so decoding does not
// allocate once they are known.
type Decoder struct {
	strs map[string]string
	// Clock converts the kernel's monotonic timestamps to wall time.
	Clock Clock
}

// NewDecoder returns a decoder using clock for wall times.
func NewDecoder(clock Clock) *Decoder { return &Decoder{strs: make(map[string]string), Clock: clock} }

// intern returns the NUL-terminated string in b, shared with earlier calls.
func (d *Decoder) intern(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return ""
	}
	if s, ok := d.strs[string(b)]; ok { // no allocation for the lookup
		return s
	}
	if len(d.strs) > 4096 { // pathological churn of names: start over
		clear(d.strs)
	}
	s := string(b)
	d.strs[s] = s
	return s
}

// Decode fills ev from one record. ev is reset first.
func (d *Decoder) Decode(rec []byte, ev *rdma.Event) error {
	if len(rec) < oldRecordSize {
		return fmt.Errorf("record of %d bytes, expected %d", len(rec), recordSize)
	}
	// Recordings made before the span fields were added are shorter:
	// they still decode, without them.
	full := len(rec) >= recordSize
	le := binary.LittleEndian
	u32 := func(off int) uint32 { return le.Uint32(rec[off:]) }
	*ev = rdma.Event{}
	ev.Mono = le.Uint64(rec[offTS:])
	ev.Time = d.Clock.Wall(ev.Mono)
	ev.Cgroup = le.Uint64(rec[offCgroup:])
	ev.Obj = le.Uint64(rec[offObj:])
	kind, flags := bpf.RdmatraceEventKind(u32(offKind)), bpf.RdmatraceEventFlag(u32(offFlags))
	switch kind {
	case cResAdd:
		ev.Kind = rdma.EvCreate
	case cResDel, cResCommitDel:
		ev.Kind = rdma.EvDestroy
	case cResBeginDel:
		ev.Kind = rdma.EvDestroyBegin
	case cResAbortDel:
		ev.Kind = rdma.EvDestroyAbort
	case cQPState:
		ev.Kind = rdma.EvModify
	case cCMIDCreate:
		ev.Kind = rdma.EvCMIDCreate
	case cCM:
		tp := u32(offCMTP)
		if tp == 0 || int(tp) >= len(cmKinds) {
			return fmt.Errorf("rdma_cma record with unknown tracepoint %d", tp)
		}
		ev.Kind = cmKinds[tp]
	case cDevRegister:
		ev.Kind = rdma.EvDevRegister
	case cDevUnregister:
		ev.Kind = rdma.EvDevUnregister
	case cDevUnregistered:
		ev.Kind = rdma.EvDevUnregistered
	case cSpan:
		if !full {
			return fmt.Errorf("span record of %d bytes, expected %d", len(rec), recordSize)
		}
		fn := u32(offFunc)
		if fn == 0 || int(fn) >= len(spanFuncs) {
			return fmt.Errorf("span record with unknown function %d", fn)
		}
		ev.Kind, ev.Func = rdma.EvSpan, spanFuncs[fn]
	case cPortBusy:
		if !full {
			return fmt.Errorf("port-busy record of %d bytes, expected %d", len(rec), recordSize)
		}
		op := u32(offFunc)
		if op == 0 || int(op) >= len(portOps) {
			return fmt.Errorf("port-busy record with unknown operation %d", op)
		}
		ev.Kind, ev.Func = rdma.EvPortBusy, portOps[op].name
		ev.Suppressed = u32(offSuppress)
		if portOps[op].cm {
			ev.Type, ev.ID = rdma.ResCMID, u32(offID)
			ev.Flags |= rdma.EvHasRes
		}
	case cSMCFallback:
		ev.Kind = rdma.EvSMCFallback
		ev.Inode = uint64(u32(offID))
	case cSMCLinkCreate, cSMCLinkDown, cSMCLinkDestroy:
		if !full {
			return fmt.Errorf("smc link record of %d bytes, expected %d", len(rec), recordSize)
		}
		switch kind {
		case cSMCLinkCreate:
			ev.Kind = rdma.EvSMCLinkCreate
		case cSMCLinkDown:
			ev.Kind = rdma.EvSMCLinkDown
		default:
			ev.Kind = rdma.EvSMCLinkDestroy
		}
		ev.SMC.ID = uint8(u32(offID))
		if st := int(rec[offNewState]); st < len(rdma.SMCLinkStates) {
			ev.SMC.State = rdma.SMCLinkStates[st]
		}
		// A link group's id is never 0 (smc numbers them from 256 up, by
		// 256): 0 is a link the program found no group of.
		if lgr := le.Uint64(rec[offSize:]); uint32(lgr) != 0 {
			ev.SMC.LGR, ev.SMC.Role, ev.SMC.HasLGR = uint32(lgr), [2]string{"client", "server"}[lgr>>32&1], true
		}
	case cOffCPU:
		if !full {
			return fmt.Errorf("off-cpu record of %d bytes, expected %d", len(rec), recordSize)
		}
		ev.Kind = rdma.EvOffCPU
		ev.Wait = le.Uint64(rec[offWait:])
		ev.Next = rdma.Owner{PID: u32(offNextPID), TID: u32(offNextPID), Comm: d.intern(rec[offNextComm:recordSize])}
		if flags&cfPreempted != 0 {
			ev.Flags |= rdma.EvPreempted
		}
	default:
		return fmt.Errorf("record of unknown kind %d", kind)
	}
	if kind < cDevRegister {
		ev.Type = rdma.ResType(rec[offResType])
		ev.Flags |= rdma.EvHasRes
		ev.ID = u32(offID)
	}
	if flags&cfUser != 0 {
		ev.Flags |= rdma.EvUser
	}
	if flags&cfExiting != 0 {
		ev.Flags |= rdma.EvActorExiting
	}
	if flags&cfClosing != 0 {
		ev.Flags |= rdma.EvFileClose
	}
	if flags&cfHasDev != 0 {
		ev.Flags |= rdma.EvHasDev
		ev.DevIndex = u32(offDevIndex)
		ev.DevName = d.intern(rec[offDevName:offOwnComm])
	}
	if p := u32(offPort); p != 0 {
		ev.Port = p
		ev.Resource.Has |= rdma.HasPort
	}
	if flags&cfHasOwner != 0 {
		ev.Flags |= rdma.EvHasOwner
		ev.Owner.PID = u32(offOwnerPID)
		ev.Owner.TID = u32(offOwnerTID)
		ev.Owner.Comm = d.intern(rec[offOwnComm:offKernName])
		if len(rec) >= offOwnerCg+8 {
			ev.OwnerCgroup = le.Uint64(rec[offOwnerCg:])
		}
	}
	ev.Owner.KernName = d.intern(rec[offKernName:offActComm])
	ev.Actor = rdma.Owner{PID: u32(offActorPID), TID: u32(offActorTID), Comm: d.intern(rec[offActComm:offSrc])}
	if flags&cfHasQP != 0 {
		ev.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		ev.LQPN = u32(offQPN)
		ev.QPType = rdma.QPType(rec[offQPType])
	}
	if flags&cfHasState != 0 {
		ev.SetState(rec[offNewState])
		if kind == cQPState && rec[offOldState] != stateUnknown {
			ev.PrevState = rec[offOldState]
			ev.Flags |= rdma.EvHasPrevState
		}
	}
	if flags&cfHasCM != 0 {
		ev.Flags |= rdma.EvHasCM
		ev.CMEvent = rdma.CMEvent(u32(offCMEvent))
	}
	ev.Status = int32(u32(offStatus))
	if kind == cSpan || kind == cOffCPU {
		ev.Dur = le.Uint64(rec[offDur:])
		ev.Flags |= rdma.EvHasDur
		if kind == cSpan { // a span runs in its caller's context: the caller owns it
			ev.Owner = ev.Actor
			ev.Flags |= rdma.EvHasOwner
		}
		// An off-CPU spell's Actor is the task that was running at
		// switch-in: the last to run in the thread's place (Next the one
		// that ran longest, or the first).
	}
	if flags&cfHasSize != 0 && full {
		ev.Size = le.Uint64(rec[offSize:])
		ev.Flags |= rdma.EvHasSize
	}
	if flags&cfHasAddr != 0 {
		ev.PS = rdma.PortSpace(u32(offPS))
		// A family of 0 means the ID has no address yet: not worth the
		// error DecodeSockaddr would build.
		if le.Uint16(rec[offSrc:]) != 0 {
			if src, _, err := rdma.DecodeSockaddr(rec[offSrc : offSrc+addrLen]); err == nil {
				ev.Src = src
				ev.Resource.Has |= rdma.HasSrcAddr | rdma.HasPS
			}
		}
		if le.Uint16(rec[offDst:]) != 0 {
			if dst, _, err := rdma.DecodeSockaddr(rec[offDst : offDst+addrLen]); err == nil {
				ev.Dst = dst
				ev.Resource.Has |= rdma.HasDstAddr
			}
		}
	}
	return nil
}
