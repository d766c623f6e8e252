package restable

import (
	"net/netip"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Res is what the table keeps of a resource: the event it was last known
// by (its create, or a snapshot's), in a third of an rdma.Event's size (a
// table holds hundreds of thousands). It leaves out the parts no such
// event carries (a span, a port conflict, an off-CPU spell, an SMC link,
// QP settings, a fault), and keeps the resource's fields a traced event
// sets inline and the others (what netlink's snapshots add: counters,
// keys, remote QP numbers, unknown columns) apart, only when one is set.
// Event gives the event back whole.
type Res struct {
	Time        time.Time
	Mono        uint64
	Kind        rdma.EventKind
	Flags       rdma.EventFlag
	ID          uint32
	PrevState   uint8
	CMEvent     rdma.CMEvent
	Status      int32
	Actor       rdma.Owner
	Cgroup      uint64
	OwnerCgroup uint64
	Obj         uint64
	Size        uint64
	Stack       *rdma.CallStack

	// The resource (rdma.Resource): its fields a traced event sets.
	Type     rdma.ResType
	QPType   rdma.QPType
	QPState  rdma.QPState
	CMState  rdma.CMState
	PS       rdma.PortSpace
	DevIndex uint32
	Port     uint32
	LQPN     uint32
	DevName  string
	Fields   rdma.Field // rdma.Resource.Has: which of its fields were given
	Src, Dst netip.AddrPort
	Owner    rdma.Owner
	// more holds the resource's other fields, nil when none is set.
	more *rdma.Resource
}

// resOf is what the table keeps of e.
func resOf(e *rdma.Event) Res {
	r := &e.Resource
	res := Res{Time: e.Time, Mono: e.Mono, Kind: e.Kind, Flags: e.Flags, ID: e.ID, PrevState: e.PrevState,
		CMEvent: e.CMEvent, Status: e.Status, Actor: e.Actor, Cgroup: e.Cgroup, OwnerCgroup: e.OwnerCgroup,
		Obj: e.Obj, Size: e.Size, Stack: e.Stack,
		Type: r.Type, QPType: r.QPType, QPState: r.QPState, CMState: r.CMState, PS: r.PS, DevIndex: r.DevIndex,
		Port: r.Port, LQPN: r.LQPN, DevName: r.DevName, Fields: r.Has, Src: r.Src, Dst: r.Dst, Owner: r.Owner}
	if !onlyInline(r) {
		more := *r
		res.more = &more
	}
	return res
}

// onlyInline reports whether the resource's fields that Res keeps apart
// are all unset (TestResKeepsEveryFieldOfAnEvent checks the list).
func onlyInline(r *rdma.Resource) bool {
	return r.Withheld == 0 && r.CMIDN == 0 && r.CQN == 0 && r.MRN == 0 && r.PDN == 0 && r.CTXN == 0 && r.SRQN == 0 &&
		r.RQPN == 0 && r.RQPSN == 0 && r.SQPSN == 0 && r.PathMig == 0 &&
		r.SrcZone == "" && r.DstZone == "" && r.Netdev == "" && r.DevType == "" &&
		r.CQE == 0 && r.Users == 0 && r.PollCtx == 0 && !r.DIM &&
		r.RKey == 0 && r.LKey == 0 && r.IOVA == 0 && r.MRLen == 0 && r.LocalDMALKey == 0 && r.UnsafeGlobalRKey == 0 &&
		r.SRQType == 0 && len(r.QPs) == 0 && len(r.Extra) == 0
}

// Resource is the resource, whole.
func (r *Res) Resource() rdma.Resource {
	var res rdma.Resource
	if r.more != nil {
		res = *r.more
	}
	res.Type, res.QPType, res.QPState, res.CMState, res.PS = r.Type, r.QPType, r.QPState, r.CMState, r.PS
	res.DevIndex, res.Port, res.LQPN, res.DevName, res.Has = r.DevIndex, r.Port, r.LQPN, r.DevName, r.Fields
	res.Src, res.Dst, res.Owner = r.Src, r.Dst, r.Owner
	return res
}

// Event is the resource's event, whole.
func (r *Res) Event() *rdma.Event {
	return &rdma.Event{Mono: r.Mono, Time: r.Time, Kind: r.Kind, Flags: r.Flags, Resource: r.Resource(), ID: r.ID,
		PrevState: r.PrevState, CMEvent: r.CMEvent, Status: r.Status, Actor: r.Actor, Cgroup: r.Cgroup,
		OwnerCgroup: r.OwnerCgroup, Obj: r.Obj, Size: r.Size, Stack: r.Stack}
}

// Has reports whether all of f are set, as rdma.Event.Has.
func (r *Res) Has(f rdma.EventFlag) bool { return r.Flags&f == f }

// Given reports whether the source gave all of f, as
// rdma.Resource.Given.
func (r *Res) Given(f rdma.Field) bool { return r.Fields&f == f }

// SetState sets the resource's state, as rdma.Event.SetState.
func (r *Res) SetState(s uint8) {
	if r.Type == rdma.ResCMID {
		r.CMState = rdma.CMState(s)
	} else {
		r.QPState = rdma.QPState(s)
	}
	r.Fields |= rdma.HasState
}
