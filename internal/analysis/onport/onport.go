// Package onport says what lives on an RDMA port when its state changes
// (an async event of the port or its device): the objects the kernel lists
// there at that moment, counted per owner.
package onport

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// order is how a summary lists the types: what is on the port first.
var order = []rdma.ResType{rdma.ResQP, rdma.ResCMID, rdma.ResCQ, rdma.ResSRQ, rdma.ResPD, rdma.ResMR, rdma.ResCTX}

// Summary counts the objects of res on device dev's port, per owner: "2
// qp, 2 cm_id, 2 cq, 1 pd, 2 mr of rping[212]", "1 qp, 1 cq of [rdma_cm]".
// QPs and rdma_cm IDs count when they are on the port (or on no port yet);
// CQs, PDs, MRs, SRQs and contexts, which belong to the device, when the
// device is dev. Port 0 (a device's event) counts the whole device. Owners
// are ordered by name; empty, not nil, when nothing is there.
func Summary(res []rdma.Resource, dev string, port uint32) []string {
	type owner struct {
		name   string
		counts map[rdma.ResType]int
	}
	byName := map[string]*owner{}
	for i := range res {
		r := &res[i]
		if r.DevName != dev {
			continue
		}
		if port != 0 && (r.Type == rdma.ResQP || r.Type == rdma.ResCMID) && r.Given(rdma.HasPort) && r.Port != port {
			continue
		}
		name := ownerName(&r.Owner)
		o := byName[name]
		if o == nil {
			o = &owner{name: name, counts: map[rdma.ResType]int{}}
			byName[name] = o
		}
		o.counts[r.Type]++
	}
	owners := make([]*owner, 0, len(byName))
	for _, o := range byName {
		owners = append(owners, o)
	}
	slices.SortFunc(owners, func(a, b *owner) int { return cmp.Compare(a.name, b.name) })
	out := []string{}
	for _, o := range owners {
		var parts []string
		for _, t := range order {
			if n := o.counts[t]; n > 0 {
				parts = append(parts, strconv.Itoa(n)+" "+t.String())
			}
		}
		if len(parts) > 0 {
			out = append(out, strings.Join(parts, ", ")+" of "+o.name)
		}
	}
	return out
}

// ownerName is how the trace view names an owner: comm[pid], or [module].
func ownerName(o *rdma.Owner) string {
	switch {
	case o.KernName != "":
		return "[" + o.KernName + "]"
	case o.PID != 0:
		return o.Comm + "[" + strconv.FormatUint(uint64(o.PID), 10) + "]"
	case o.TID != 0:
		return o.Comm + "[" + strconv.FormatUint(uint64(o.TID), 10) + "]"
	}
	return "?"
}

// Lookup summarizes a port event's port from a netlink listing taken when
// the event is handled (a port's events are rare; the objects a PORT_ERR
// hits are still there).
type Lookup struct {
	// Owners names the listed objects' owners (netlink gives a pid or a
	// module's name); nil: a process is its pid.
	Owners nldev.Owners
	take   func(nldev.Owners) ([]rdma.Resource, error)
}

// NewLookup lists the resources through RDMA netlink.
func NewLookup() *Lookup {
	return &Lookup{take: func(owners nldev.Owners) ([]rdma.Resource, error) {
		inv, err := nldev.TakeInventory(nldev.InventoryOptions{Types: order, Owners: owners})
		return inv.Resources, err
	}}
}

// Names is Summary of e's device and port, for a port's or a device's
// async event; nil for other events and when netlink cannot be read.
func (l *Lookup) Names(e *rdma.Event) []string {
	if !e.IsPortEvent() || e.DevName == "" {
		return nil
	}
	res, err := l.take(l.Owners)
	if err != nil && len(res) == 0 {
		return nil
	}
	return Summary(res, e.DevName, e.Port)
}
