// Package tracer loads rdmatrace's eBPF programs, attaches each hook with
// the best variant this kernel allows (reporting what it skipped and why),
// reads the ring buffer, counts what the kernel had to drop, and decodes
// records into rdma.Event values.
package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The records of bpf/rdmatrace.bpf.c, as bpf2go generates them: a common
// header (struct event_hdr, bpf/common.h), then one record per group of kinds whose
// fields mean the same. The decoder copies a record into its generated
// struct; both BPF targets, like every host rdmatrace builds for, are
// little-endian, so the copy is the decoding.
const (
	hdrSize         = int(unsafe.Sizeof(bpf.RdmatraceEventHdr{}))
	resSize         = int(unsafe.Sizeof(bpf.RdmatraceResEvent{}))
	devSize         = int(unsafe.Sizeof(bpf.RdmatraceDevEvent{}))
	portBusySize    = int(unsafe.Sizeof(bpf.RdmatracePortBusyEvent{}))
	smcLinkSize     = int(unsafe.Sizeof(bpf.RdmatraceSmcLinkEvent{}))
	smcFallbackSize = int(unsafe.Sizeof(bpf.RdmatraceSmcFallbackEvent{}))
	spanSize        = int(unsafe.Sizeof(bpf.RdmatraceSpanEvent{}))
	offCPUSize      = int(unsafe.Sizeof(bpf.RdmatraceOffCpuEvent{}))
	qpAttrSize      = int(unsafe.Sizeof(bpf.RdmatraceQpAttrEvent{}))
	asyncSize       = int(unsafe.Sizeof(bpf.RdmatraceAsyncEvent{}))
	qpErrorSize     = int(unsafe.Sizeof(bpf.RdmatraceQpErrorEvent{}))
)

// load copies rec into *v, which must be exactly as long: a record of
// another length comes from another program than this decoder's.
func load[T any](rec []byte, v *T, what string) error {
	n := int(unsafe.Sizeof(*v))
	if len(rec) != n {
		return fmt.Errorf("%s record of %d bytes, expected %d", what, len(rec), n)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), n), rec)
	return nil
}

// chars is a C char array as bytes.
func chars(a []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a))
}

// The C side's enums, as bpf2go generates them from rdmatrace.bpf.c (one
// kind space, bpf/common.h's enum event_kind, whichever topic header
// defines the record): the object and this decoder cannot disagree on a
// number.
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
	cQPAttr          = bpf.RdmatraceEventKindEV_QP_ATTR
	cAsync           = bpf.RdmatraceEventKindEV_ASYNC
	cQPError         = bpf.RdmatraceEventKindEV_QP_ERROR

	cfUser      = bpf.RdmatraceEventFlagF_USER
	cfHasDev    = bpf.RdmatraceEventFlagF_HAS_DEV
	cfHasOwner  = bpf.RdmatraceEventFlagF_HAS_OWNER
	cfHasState  = bpf.RdmatraceEventFlagF_HAS_STATE
	cfHasQP     = bpf.RdmatraceEventFlagF_HAS_QP
	cfHasCM     = bpf.RdmatraceEventFlagF_HAS_CM
	cfHasAddr   = bpf.RdmatraceEventFlagF_HAS_ADDR
	cfExiting   = bpf.RdmatraceEventFlagF_EXITING
	cfClosing   = bpf.RdmatraceEventFlagF_CLOSING
	cfOwnerExit = bpf.RdmatraceEventFlagF_OWNER_EXITING
	cfHasSize   = bpf.RdmatraceEventFlagF_HAS_SIZE
	cfPreempted = bpf.RdmatraceEventFlagF_PREEMPTED
	cfHasPeer   = bpf.RdmatraceEventFlagF_HAS_PEER
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
	bpf.RdmatraceCmTpCM_TP_LISTEN:        rdma.EvCMListen,
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
	*ev = rdma.Event{}
	var h bpf.RdmatraceEventHdr
	if len(rec) < hdrSize {
		return fmt.Errorf("record of %d bytes, shorter than the %d-byte header", len(rec), hdrSize)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&h)), hdrSize), rec)
	kind, flags := bpf.RdmatraceEventKind(h.Kind), bpf.RdmatraceEventFlag(h.Flags)
	var err error
	switch kind {
	case cResAdd, cResDel, cResBeginDel, cResCommitDel, cResAbortDel, cQPState, cCMIDCreate, cCM:
		err = d.decodeRes(rec, kind, flags, ev)
	case cDevRegister, cDevUnregister, cDevUnregistered:
		var r bpf.RdmatraceDevEvent
		if err = load(rec, &r, "device"); err == nil {
			switch kind {
			case cDevRegister:
				ev.Kind = rdma.EvDevRegister
			case cDevUnregister:
				ev.Kind = rdma.EvDevUnregister
			default:
				ev.Kind = rdma.EvDevUnregistered
			}
			d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
		}
	case cPortBusy:
		err = d.decodePortBusy(rec, flags, ev)
	case cSMCFallback:
		var r bpf.RdmatraceSmcFallbackEvent
		if err = load(rec, &r, "smc fallback"); err == nil {
			ev.Kind = rdma.EvSMCFallback
			ev.SMCFallback.Inode = r.Inode
			ev.Status = r.Reason
			d.addr(ev, flags, r.Addr.Ps, r.Addr.Src[:], r.Addr.Dst[:])
		}
	case cSMCLinkCreate, cSMCLinkDown, cSMCLinkDestroy:
		err = d.decodeSMCLink(rec, kind, flags, ev)
	case cQPAttr:
		err = d.decodeQPAttr(rec, flags, ev)
	case cAsync:
		err = d.decodeAsync(rec, flags, ev)
	case cQPError:
		err = d.decodeQPError(rec, flags, ev)
	case cCallFail:
		err = d.decodeCallFail(rec, flags, ev)
	case cGIDChange:
		err = d.decodeGIDChange(rec, flags, ev)
	case cSpan:
		var r bpf.RdmatraceSpanEvent
		if err = load(rec, &r, "span"); err != nil {
			break
		}
		if r.Func == 0 || int(r.Func) >= len(spanFuncs) {
			return fmt.Errorf("span record with unknown function %d", r.Func)
		}
		ev.Kind, ev.Span.Func = rdma.EvSpan, spanFuncs[r.Func]
		d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
		ev.Status = r.Status
		ev.Span.Dur = r.Dur
		ev.Flags |= rdma.EvHasDur
		if flags&cfHasSize != 0 {
			ev.Size = r.Size
			ev.Flags |= rdma.EvHasSize
		}
	case cOffCPU:
		var r bpf.RdmatraceOffCpuEvent
		if err = load(rec, &r, "off-cpu"); err != nil {
			break
		}
		ev.Kind = rdma.EvOffCPU
		ev.OffCPU.Dur = r.Dur
		ev.Flags |= rdma.EvHasDur
		ev.OffCPU.Wait = r.Wait
		ev.OffCPU.Next = rdma.Owner{PID: r.NextPid, TID: r.NextPid, Comm: d.intern(chars(r.NextComm[:]))}
		if flags&cfPreempted != 0 {
			ev.Flags |= rdma.EvPreempted
		}
		// An off-CPU spell's Actor is the task that was running at
		// switch-in: the last to run in the thread's place (Next the one
		// that ran longest, or the first).
	default:
		return fmt.Errorf("record of unknown kind %d", kind)
	}
	if err != nil {
		return err
	}
	d.header(&h, flags, ev)
	if kind == cSpan { // a span runs in its caller's context: the caller owns it
		ev.Owner = ev.Actor
		ev.Flags |= rdma.EvHasOwner
	}
	return nil
}

// header decodes what every record has: when, the actor, the owner.
func (d *Decoder) header(h *bpf.RdmatraceEventHdr, flags bpf.RdmatraceEventFlag, ev *rdma.Event) {
	ev.Mono = h.Ts
	ev.Time = d.Clock.Wall(ev.Mono)
	ev.Cgroup = h.Cgroup
	ev.Obj = h.Obj
	if flags&cfUser != 0 {
		ev.Flags |= rdma.EvUser
	}
	if flags&cfExiting != 0 {
		ev.Flags |= rdma.EvActorExiting
	}
	if flags&cfClosing != 0 {
		ev.Flags |= rdma.EvFileClose
		// A file released while its owner's process exits is the exit's
		// cleanup, whichever task let go of the file last: another
		// process that held the owner's memory (whose mappings of a
		// uverbs file count as references), such as the tracer reading
		// its /proc/PID/maps for --stacks.
		if flags&cfOwnerExit != 0 {
			ev.Flags |= rdma.EvActorExiting
		}
	}
	if flags&cfHasOwner != 0 {
		ev.Flags |= rdma.EvHasOwner
		ev.Owner.PID = h.OwnerPid
		ev.Owner.TID = h.OwnerTid
		ev.Owner.Comm = d.intern(chars(h.OwnerComm[:]))
		ev.OwnerCgroup = h.OwnerCgroup
	}
	ev.Actor = rdma.Owner{PID: h.ActorPid, TID: h.ActorTid, Comm: d.intern(chars(h.ActorComm[:]))}
}

// decodeRes decodes a resource's lifecycle record (struct res_event).
func (d *Decoder) decodeRes(rec []byte, kind bpf.RdmatraceEventKind, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceResEvent
	if err := load(rec, &r, "resource"); err != nil {
		return err
	}
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
		if r.CmTp == 0 || int(r.CmTp) >= len(cmKinds) {
			return fmt.Errorf("rdma_cma record with unknown tracepoint %d", r.CmTp)
		}
		ev.Kind = cmKinds[r.CmTp]
	}
	ev.Type = rdma.ResType(r.Res.ResType)
	ev.Flags |= rdma.EvHasRes
	ev.ID = r.Res.Id
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	ev.Owner.KernName = d.intern(chars(r.Res.KernName[:]))
	d.qp(ev, flags, r.Res.Qpn, r.Res.QpType)
	if flags&cfHasState != 0 {
		ev.SetState(r.Res.NewState)
		if kind == cQPState && r.Res.OldState != stateUnknown {
			ev.PrevState = r.Res.OldState
			ev.Flags |= rdma.EvHasPrevState
		}
	}
	if flags&cfHasCM != 0 {
		ev.Flags |= rdma.EvHasCM
		ev.CMEvent = rdma.CMEvent(r.CmEvent)
	}
	ev.Status = r.Status
	if flags&cfHasSize != 0 {
		ev.Size = r.Size
		ev.Flags |= rdma.EvHasSize
	}
	d.addr(ev, flags, r.Addr.Ps, r.Addr.Src[:], r.Addr.Dst[:])
	return nil
}

// decodePortBusy decodes a port-busy record (struct port_busy_event).
func (d *Decoder) decodePortBusy(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatracePortBusyEvent
	if err := load(rec, &r, "port-busy"); err != nil {
		return err
	}
	if r.Op == 0 || int(r.Op) >= len(portOps) {
		return fmt.Errorf("port-busy record with unknown operation %d", r.Op)
	}
	ev.Kind, ev.PortBusy.Op = rdma.EvPortBusy, portOps[r.Op].name
	ev.PortBusy.Suppressed = r.Suppressed
	if portOps[r.Op].cm {
		ev.Type, ev.ID = rdma.ResCMID, r.Res.Id
		ev.Flags |= rdma.EvHasRes
	}
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	ev.Owner.KernName = d.intern(chars(r.Res.KernName[:]))
	d.qp(ev, flags, r.Res.Qpn, r.Res.QpType)
	if flags&cfHasState != 0 {
		ev.SetState(r.Res.NewState)
	}
	ev.Status = r.Status
	d.addr(ev, flags, r.Addr.Ps, r.Addr.Src[:], r.Addr.Dst[:])
	return nil
}

// decodeQPAttr decodes a QP's settings at a modify (struct qp_attr_event).
func (d *Decoder) decodeQPAttr(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceQpAttrEvent
	if err := load(rec, &r, "qp-attr"); err != nil {
		return err
	}
	ev.Kind, ev.Type = rdma.EvQPAttr, rdma.ResType(r.Res.ResType)
	ev.Flags |= rdma.EvHasRes
	ev.ID = r.Res.Id
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	ev.Owner.KernName = d.intern(chars(r.Res.KernName[:]))
	d.qp(ev, flags, r.Res.Qpn, r.Res.QpType)
	a := &ev.QPAttr
	a.Mask = rdma.QPAttrMask(r.Mask) & rdma.QPAttrMaskAll
	a.Timeout, a.RetryCnt, a.RNRRetry, a.MinRNRTimer = r.Timeout, r.RetryCnt, r.RnrRetry, r.MinRnrTimer
	a.PathMTU = uint8(min(r.PathMtu, 0xff))
	qa := bpf.RdmatraceQpAttrFlag(r.QaFlags)
	if qa&bpf.RdmatraceQpAttrFlagQA_HAS_GID != 0 {
		a.HasGID, a.SGID, a.SGIDIndex, a.GIDType = true, netip.AddrFrom16(r.Sgid), r.SgidIndex, rdma.GIDType(min(r.GidType, 0xff))
	}
	if qa&bpf.RdmatraceQpAttrFlagQA_HAS_NDEV != 0 {
		a.HasNdev, a.Ndev, a.NdevMTU, a.NetNS = true, d.intern(chars(r.Ndev[:])), r.NdevMtu, r.Netns
	}
	if qa&bpf.RdmatraceQpAttrFlagQA_VLAN != 0 {
		a.HasVLAN, a.VLAN = true, r.Vlan
	}
	if qa&bpf.RdmatraceQpAttrFlagQA_HAS_GRH != 0 {
		a.HasGRH, a.DGID = true, netip.AddrFrom16(r.Dgid)
	}
	return nil
}

// decodeSMCLink decodes an SMC-R link record (struct smc_link_event).
func (d *Decoder) decodeSMCLink(rec []byte, kind bpf.RdmatraceEventKind, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceSmcLinkEvent
	if err := load(rec, &r, "smc link"); err != nil {
		return err
	}
	switch kind {
	case cSMCLinkCreate:
		ev.Kind = rdma.EvSMCLinkCreate
	case cSMCLinkDown:
		ev.Kind = rdma.EvSMCLinkDown
	default:
		ev.Kind = rdma.EvSMCLinkDestroy
	}
	ev.SMC.ID = r.LinkId
	if st := int(r.LinkState); st < len(rdma.SMCLinkStates) {
		ev.SMC.State = rdma.SMCLinkStates[st]
	}
	// A link group's id is never 0 (smc numbers them from 256 up, by
	// 256): 0 is a link the program found no group of.
	if r.LgrId != 0 {
		ev.SMC.LGR, ev.SMC.Role, ev.SMC.HasLGR = r.LgrId, [2]string{"client", "server"}[r.Role&1], true
	}
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	d.qp(ev, flags, r.Qpn, r.QpType)
	ev.Status = r.Status
	return nil
}

// dev decodes an event's device (F_HAS_DEV) and port (0: none).
func (d *Decoder) dev(ev *rdma.Event, flags bpf.RdmatraceEventFlag, index, port uint32, name []int8) {
	if flags&cfHasDev != 0 {
		ev.Flags |= rdma.EvHasDev
		ev.DevIndex = index
		ev.DevName = d.intern(chars(name))
	}
	if port != 0 {
		ev.Port = port
		ev.Resource.Has |= rdma.HasPort
	}
}

// qp decodes a QP's number and type (F_HAS_QP).
func (d *Decoder) qp(ev *rdma.Event, flags bpf.RdmatraceEventFlag, qpn uint32, qpType uint8) {
	if flags&cfHasQP != 0 {
		ev.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		ev.LQPN = qpn
		ev.QPType = rdma.QPType(qpType)
	}
}

// addr decodes an rdma_cm ID's or a socket's addresses (F_HAS_ADDR).
func (d *Decoder) addr(ev *rdma.Event, flags bpf.RdmatraceEventFlag, ps uint32, src, dst []byte) {
	if flags&cfHasAddr == 0 {
		return
	}
	ev.PS = rdma.PortSpace(ps)
	// A family of 0 means the ID has no address yet: not worth the
	// error DecodeSockaddr would build.
	if binary.LittleEndian.Uint16(src) != 0 {
		if a, _, err := rdma.DecodeSockaddr(src); err == nil {
			ev.Src = a
			ev.Resource.Has |= rdma.HasSrcAddr | rdma.HasPS
		}
	}
	if binary.LittleEndian.Uint16(dst) != 0 {
		if a, _, err := rdma.DecodeSockaddr(dst); err == nil {
			ev.Dst = a
			ev.Resource.Has |= rdma.HasDstAddr
		}
	}
}

// noResType is the C side's res_type of an async event about a port or a
// device (or a WQ, which restrack does not track).
const noResType = 0xff

// failedRes decodes the object of an async event or a QP error: the
// resource (unless noResType), its device and port, owner, QP and peer.
func (d *Decoder) failedRes(ev *rdma.Event, flags bpf.RdmatraceEventFlag, resType uint8, id uint32, kern []int8,
	qpn uint32, qpType uint8, gid [16]uint8, peerQPN uint32) {
	if resType != noResType {
		ev.Type, ev.ID = rdma.ResType(resType), id
		ev.Flags |= rdma.EvHasRes
	}
	ev.Owner.KernName = d.intern(chars(kern))
	d.qp(ev, flags, qpn, qpType)
	if flags&cfHasPeer != 0 {
		ev.Fault.PeerGID, ev.Fault.PeerQPN = netip.AddrFrom16(gid), peerQPN
	}
}

// decodeAsync decodes an asynchronous event (struct async_event).
func (d *Decoder) decodeAsync(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceAsyncEvent
	if err := load(rec, &r, "async"); err != nil {
		return err
	}
	ev.Kind = rdma.EvAsync
	if r.IbEvent > 255 {
		return fmt.Errorf("async record with IB event %d, expected up to 255", r.IbEvent)
	}
	ev.Fault.IBEvent = rdma.IBEvent(r.IbEvent)
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	d.failedRes(ev, flags, r.Res.ResType, r.Res.Id, r.Res.KernName[:], r.Res.Qpn, r.Res.QpType, r.Peer.Gid, r.Peer.Qpn)
	return nil
}

// qpErrorReports maps the C side's enum qp_error_cause.
var qpErrorReports = [...]rdma.QPErrorReport{
	bpf.RdmatraceQpErrorCauseQPE_DRIVER_ERR: rdma.QPErrDriver,
	bpf.RdmatraceQpErrorCauseQPE_FIRST_WC:   rdma.QPErrFirst,
	bpf.RdmatraceQpErrorCauseQPE_WC_COUNT:   rdma.QPErrTotal,
}

// decodeQPError decodes a QP error (struct qp_error_event).
func (d *Decoder) decodeQPError(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceQpErrorEvent
	if err := load(rec, &r, "qp-error"); err != nil {
		return err
	}
	if r.Cause == 0 || int(r.Cause) >= len(qpErrorReports) {
		return fmt.Errorf("qp-error record with unknown cause %d", r.Cause)
	}
	if r.WcStatus > 255 {
		return fmt.Errorf("qp-error record with completion status %d, expected up to 255", r.WcStatus)
	}
	ev.Kind = rdma.EvQPError
	ev.Fault.Report = qpErrorReports[r.Cause]
	ev.Fault.WCStatus = rdma.WCStatus(r.WcStatus)
	ev.Fault.Count = r.Count
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	d.failedRes(ev, flags, r.Res.ResType, r.Res.Id, r.Res.KernName[:], r.Res.Qpn, r.Res.QpType, r.Peer.Gid, r.Peer.Qpn)
	return nil
}
