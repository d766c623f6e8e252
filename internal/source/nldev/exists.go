package nldev

import (
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ExistsEvent describes a resource from a netlink snapshot as an "exists"
// event: it was there before tracing started, so its creation was not seen.
// The event carries the resource as the dump gave it; x names its owner's
// process (the kernel gives the creating thread).
func ExistsEvent(r *rdma.Resource, now time.Time, x *enrich.Enricher) rdma.Event {
	e := rdma.Event{Time: now, Kind: rdma.EvExists, Resource: *r, ID: r.ID(),
		Flags: rdma.EvHasRes | rdma.EvHasDev}
	if r.Type == rdma.ResQP {
		e.ID = 0 // a QP's restrack id is not in the dump; lqpn names it
	}
	e.Owner = rdma.Owner{KernName: r.Owner.KernName}
	if r.Has&rdma.HasPID != 0 {
		// The kernel reports the creating thread; its process may differ.
		e.Owner = x.Process(r)
		e.Owner.KernName = r.Owner.KernName
		e.Flags |= rdma.EvHasOwner | rdma.EvUser
	}
	return e
}

// ExistsEvents gives emit an "exists" event for every resource the
// kernel lists now, in every network namespace (a trace's, the leak
// hunt's and the exporter's start: what was there before tracing
// began), owners named by x. Its error says which lists could not be
// read; the events of the others are given.
func ExistsEvents(x *enrich.Enricher, emit func(*rdma.Event)) error {
	inv, err := TakeInventory(InventoryOptions{Owners: x, AllNetNS: true})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for i := range inv.Resources {
		e := ExistsEvent(&inv.Resources[i], now, x)
		emit(&e)
	}
	return inv.Err()
}
