package nldev

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/netns"
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

// ExistsOptions bound a start snapshot.
type ExistsOptions struct {
	// Max stops the snapshot once Keep has kept that many events (0: no
	// bound).
	Max int
	// Keep gets each event and says whether it was kept (shown, counted);
	// nil keeps none.
	Keep func(*rdma.Event) bool
}

// ExistsSummary is what a snapshot gave.
type ExistsSummary struct {
	Kept int
	// Cut says the snapshot stopped at Max; Listed is then how many
	// objects the kernel counts in all (its resource summary, every type
	// and device of our namespace), 0 when that could not be read.
	Cut    bool
	Listed uint64
}

// errCut stops a snapshot at its Max.
var errCut = errors.New("snapshot cut at its bound")

// ExistsEvents gives o.Keep an "exists" event for every resource the
// kernel lists now, in every network namespace (a trace's, the leak
// hunt's and the exporter's start: what was there before tracing
// began), owners named by x, one dump message at a time: nothing holds
// the whole inventory. It stops at o.Max events kept, or when ctx ends
// (its error then matches ctx.Err()). Its error says which lists could
// not be read; the events of the others are given.
func ExistsEvents(ctx context.Context, x *enrich.Enricher, o ExistsOptions) (ExistsSummary, error) {
	var sum ExistsSummary
	cl, err := Dial()
	if err != nil {
		return sum, err
	}
	defer cl.Close()
	// cut stops the dumps at Max, as ctx's end does: at the next message.
	dumps, cut := context.WithCancel(ctx)
	defer cut()
	defer cl.Bind(dumps)()
	now := time.Now().UTC()
	each := func(r *rdma.Resource) {
		if sum.Cut {
			return
		}
		x.Resource(r)
		e := ExistsEvent(r, now, x)
		if o.Keep != nil && o.Keep(&e) {
			sum.Kept++
			if o.Max > 0 && sum.Kept >= o.Max {
				sum.Cut = true
				cut()
			}
		}
	}
	var errs []error
	walk := func(c *Client) bool {
		devs, err := c.Devices()
		if err != nil {
			errs = append(errs, err)
		}
		for _, t := range rdma.ResourceTypes {
			err := c.EachResource(t, devs, each)
			if sum.Cut || ctx.Err() != nil {
				return false
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		return true
	}
	if walk(cl) {
		for _, ns := range otherNamespaces(cl, netns.Roots{}) {
			other, err := DialIn(ns)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			stop := other.Bind(dumps)
			more := walk(other)
			stop()
			other.Close()
			if !more {
				break
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("the snapshot of existing resources stopped after %d: %w", sum.Kept, err)
	}
	if sum.Cut {
		// A client of its own: this one's deadline ended its dumps.
		if c, err := Dial(); err == nil {
			if ss, err := c.Summaries(); err == nil {
				for _, s := range ss {
					for _, n := range s.Counts {
						sum.Listed += n.Value
					}
				}
			}
			c.Close()
		}
	}
	return sum, errors.Join(errs...)
}
