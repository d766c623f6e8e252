package tracer

import (
	"fmt"
	"net/netip"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

const (
	cCallFail  = bpf.RdmatraceEventKindEV_CALL_FAIL
	cGIDChange = bpf.RdmatraceEventKindEV_GID_CHANGE
	cfHasCaps  = bpf.RdmatraceEventFlagF_HAS_CAPS
)

// callOps names the C side's enum call_op: the call that failed.
var callOps = [...]string{
	bpf.RdmatraceCallOpCALL_GET_CONTEXT:        "get_context",
	bpf.RdmatraceCallOpCALL_ALLOC_PD:           "alloc_pd",
	bpf.RdmatraceCallOpCALL_CREATE_CQ:          "create_cq",
	bpf.RdmatraceCallOpCALL_CREATE_QP:          "create_qp",
	bpf.RdmatraceCallOpCALL_CREATE_SRQ:         "create_srq",
	bpf.RdmatraceCallOpCALL_REG_MR:             "reg_mr",
	bpf.RdmatraceCallOpCALL_REG_DMABUF_MR:      "reg_dmabuf_mr",
	bpf.RdmatraceCallOpCALL_ALLOC_MW:           "alloc_mw",
	bpf.RdmatraceCallOpCALL_CREATE_AH:          "create_ah",
	bpf.RdmatraceCallOpCALL_OPEN_XRCD:          "open_xrcd",
	bpf.RdmatraceCallOpCALL_CREATE_WQ:          "create_wq",
	bpf.RdmatraceCallOpCALL_OPEN_QP:            "open_qp",
	bpf.RdmatraceCallOpCALL_ALLOC_DM:           "alloc_dm",
	bpf.RdmatraceCallOpCALL_CREATE_FLOW:        "create_flow",
	bpf.RdmatraceCallOpCALL_RDMA_BIND_ADDR:     "rdma_bind_addr",
	bpf.RdmatraceCallOpCALL_RDMA_RESOLVE_ADDR:  "rdma_resolve_addr",
	bpf.RdmatraceCallOpCALL_RDMA_RESOLVE_ROUTE: "rdma_resolve_route",
	bpf.RdmatraceCallOpCALL_RDMA_LISTEN:        "rdma_listen",
	bpf.RdmatraceCallOpCALL_RDMA_CONNECT:       "rdma_connect",
}

// callLimits maps the C side's enum call_limit.
var callLimits = [...]rdma.LimitKind{
	0:                                   rdma.LimitNone,
	bpf.RdmatraceCallLimitLIMIT_RDMACG:  rdma.LimitRDMACgroup,
	bpf.RdmatraceCallLimitLIMIT_MEMLOCK: rdma.LimitMemlock,
}

// decodeCallFail decodes a failed call (struct call_fail_event).
func (d *Decoder) decodeCallFail(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceCallFailEvent
	if err := load(rec, &r, "call-fail"); err != nil {
		return err
	}
	if int(r.Op) >= len(callOps) || callOps[r.Op] == "" {
		return fmt.Errorf("call-fail record with unknown call %d", r.Op)
	}
	if r.Err >= 0 || r.Err < -4095 {
		return fmt.Errorf("call-fail record with error %d, expected -1 to -4095", r.Err)
	}
	if int(r.Limit) >= len(callLimits) {
		return fmt.Errorf("call-fail record with unknown limit %d", r.Limit)
	}
	ev.Kind = rdma.EvCallFail
	c := &ev.CallFail
	c.Op, c.Errno = callOps[r.Op], -r.Err
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	if t, ok := c.ResType(); ok { // the object it would have made
		ev.Type = t
		ev.Flags |= rdma.EvHasRes
	}
	if c.IsCMStep() {
		ev.Type, ev.ID = rdma.ResCMID, r.Res.Id
		ev.Flags |= rdma.EvHasRes
		ev.Owner.KernName = d.intern(chars(r.Res.KernName[:]))
		d.qp(ev, flags, r.Res.Qpn, r.Res.QpType)
		if flags&cfHasState != 0 {
			ev.SetState(r.Res.NewState)
		}
		d.addr(ev, flags, r.Addr.Ps, r.Addr.Src[:], r.Addr.Dst[:])
	}
	a := &r.Asked
	c.Asked = rdma.Asked{Has: rdma.AskedFlag(a.Has), QPType: rdma.QPType(a.QpType),
		MaxSendWR: a.MaxSendWr, MaxRecvWR: a.MaxRecvWr, MaxSendSGE: a.MaxSendSge, MaxRecvSGE: a.MaxRecvSge,
		MaxInlineData: a.MaxInlineData, CQE: a.Cqe, Length: a.Length, Access: a.Access}
	if flags&cfHasCaps != 0 {
		p := &r.Caps
		c.Caps = rdma.DevCaps{Valid: true, MaxQPWR: p.MaxQpWr, MaxSendSGE: p.MaxSendSge, MaxRecvSGE: p.MaxRecvSge,
			MaxCQE: p.MaxCqe, MaxMRSize: p.MaxMrSize, MaxQP: p.MaxQp, MaxCQ: p.MaxCq, MaxMR: p.MaxMr, MaxPD: p.MaxPd, MaxSRQ: p.MaxSrq}
	}
	c.Limit.Kind = callLimits[r.Limit]
	switch c.Limit.Kind {
	case rdma.LimitRDMACgroup:
		if int(r.RdmacgRes) >= len(rdma.RDMACgroupResources) {
			return fmt.Errorf("call-fail record with rdma cgroup resource %d, expected 0 or 1", r.RdmacgRes)
		}
		c.Limit.CgroupRes = rdma.RDMACgroupResources[r.RdmacgRes]
	case rdma.LimitMemlock:
		c.Limit.Memlock, c.Limit.Pinned, c.Limit.NPages = r.Memlock, r.Pinned, r.Npages
	}
	return nil
}

// decodeGIDChange decodes a GID table change (struct gid_event).
func (d *Decoder) decodeGIDChange(rec []byte, flags bpf.RdmatraceEventFlag, ev *rdma.Event) error {
	var r bpf.RdmatraceGidEvent
	if err := load(rec, &r, "gid-change"); err != nil {
		return err
	}
	if r.Op != 1 && r.Op != 2 {
		return fmt.Errorf("gid-change record with operation %d, expected 1 (add) or 2 (del)", r.Op)
	}
	if r.GidType > 255 {
		return fmt.Errorf("gid-change record with GID type %d, expected up to 255", r.GidType)
	}
	ev.Kind = rdma.EvGIDChange
	d.dev(ev, flags, r.Dev.Index, r.Dev.Port, r.Dev.Name[:])
	ev.GID = rdma.GIDChange{Added: r.Op == 1, GID: netip.AddrFrom16(r.Gid), Index: r.Index,
		Type: rdma.GIDType(r.GidType), Netdev: d.intern(chars(r.Netdev[:]))}
	return nil
}
