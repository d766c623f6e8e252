package tracer

import (
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ExistingEvent describes a resource from a netlink snapshot as an "exists"
// event: it was there before tracing started, so its creation was not seen.
// x names its owner's process (the kernel gives the creating thread).
func ExistingEvent(r *rdma.Resource, now time.Time, x *enrich.Enricher) rdma.Event {
	e := rdma.Event{Time: now, Kind: rdma.EvExists, Res: r.Type, ID: r.ID(),
		DevIndex: r.DevIndex, DevName: r.DevName,
		Flags: rdma.EvHasRes | rdma.EvHasDev}
	if r.Type == rdma.ResQP {
		e.ID = 0 // a QP's restrack id is not in the dump; lqpn names it
	}
	if r.Has&rdma.HasPort != 0 {
		e.Port, e.Flags = r.Port, e.Flags|rdma.EvHasPort
	}
	if r.Has&rdma.HasLQPN != 0 {
		e.LQPN, e.QPType, e.Flags = r.LQPN, r.QPType, e.Flags|rdma.EvHasQP
	}
	switch {
	case r.Type == rdma.ResQP && r.Has&rdma.HasState != 0:
		e.State, e.Flags = uint8(r.QPState), e.Flags|rdma.EvHasState
	case r.Type == rdma.ResCMID && r.Has&rdma.HasState != 0:
		e.State, e.Flags = uint8(r.CMState), e.Flags|rdma.EvHasState
		e.PS, e.Src, e.Dst, e.Flags = r.PS, r.Src, r.Dst, e.Flags|rdma.EvHasAddr
	}
	if r.Has&rdma.HasPID != 0 {
		// The kernel reports the creating thread; its process may differ.
		e.Owner = x.Process(r)
		e.Flags |= rdma.EvHasOwner | rdma.EvUser
	}
	e.Owner.KernName = r.Owner.KernName
	return e
}
