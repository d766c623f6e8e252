// Package snapdiff turns successive RDMA netlink snapshots into events:
// what appeared (create, dev_register), vanished (destroy,
// dev_unregistered) or changed state (modify) or name (dev-rename)
// between two of them. It is how trace sees resources without BPF. Every
// event it makes carries rdma.EvPolled: its time is the later snapshot's,
// and anything created and destroyed between two snapshots, or changed and
// changed back, is not seen at all.
package snapdiff

import (
	"cmp"
	"slices"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Snapshot is what one round of netlink dumps listed.
type Snapshot struct {
	Time    time.Time
	Devices []rdma.Device
	// DevicesOK: the device list is whole (its dump did not fail).
	DevicesOK bool
	// Types are the resource types asked; Failed those whose dumps failed
	// (or the kernel cannot dump): their resources are compared with the
	// last snapshot that listed them whole, never taken as destroyed.
	Types     []rdma.ResType
	Failed    []rdma.ResType
	Resources []rdma.Resource
}

// Options say what a Differ reports.
type Options struct {
	// Devices: report devices registered, unregistered and renamed
	// (false where the monitor group reports them as they happen).
	Devices bool
	// Owner names a new resource's owner; nil: as the kernel gives it
	// (the creating thread's pid and comm, or a kernel module).
	Owner func(*rdma.Resource) rdma.Owner
}

// key names a resource across snapshots: its device, type and number.
type key struct {
	dev uint32
	typ rdma.ResType
	id  uint32
}

// Differ holds the last snapshot and compares each new one with it.
type Differ struct {
	o    Options
	devs map[uint32]string // index -> name; nil before a whole list
	res  map[key]rdma.Event
	// known are the types listed whole at least once: a resource of
	// another type was not created now, only first seen.
	known map[rdma.ResType]bool
}

// New is a Differ with no snapshot yet.
func New(o Options) *Differ {
	return &Differ{o: o, res: map[key]rdma.Event{}, known: map[rdma.ResType]bool{}}
}

// Next compares s with the snapshot before and returns the events, in
// this order: devices registered and renamed, resources destroyed,
// changed and created (each by device, type and number), devices
// unregistered. A resource whose owner changed under the same number was
// destroyed and another made. Of the first snapshot (and of a type first
// listed whole now) each resource is an "exists" event: it was there
// when first looked at. Every other event is polled.
func (d *Differ) Next(s *Snapshot) []rdma.Event {
	var reg, destroyed, changed, created, unreg []rdma.Event
	dev := func(kind rdma.EventKind, index uint32, name string) rdma.Event {
		return rdma.Event{Time: s.Time, Kind: kind, Flags: rdma.EvHasDev | rdma.EvPolled,
			Resource: rdma.Resource{DevIndex: index, DevName: name}}
	}
	if s.DevicesOK {
		now := make(map[uint32]string, len(s.Devices))
		for _, dv := range s.Devices {
			now[dv.Index] = dv.Name
		}
		if d.devs != nil && d.o.Devices {
			for i, name := range now {
				switch old, ok := d.devs[i]; {
				case !ok:
					reg = append(reg, dev(rdma.EvDevRegister, i, name))
				case old != name:
					reg = append(reg, dev(rdma.EvDevRename, i, name))
				}
			}
			for i, name := range d.devs {
				if _, ok := now[i]; !ok {
					unreg = append(unreg, dev(rdma.EvDevUnregistered, i, name))
				}
			}
		}
		d.devs = now
	}
	failed := map[rdma.ResType]bool{}
	for _, t := range s.Failed {
		failed[t] = true
	}
	seen := map[key]bool{}
	for i := range s.Resources {
		r := &s.Resources[i]
		if failed[r.Type] {
			continue
		}
		k := key{r.DevIndex, r.Type, r.ID()}
		seen[k] = true
		old, ok := d.res[k]
		if ok && sameOwner(&old, r) {
			if r.Given(rdma.HasState) && old.Given(rdma.HasState) && stateOf(r) != old.State() {
				e := old
				e.Time, e.Kind, e.PrevState = s.Time, rdma.EvModify, old.State()
				e.Flags |= rdma.EvHasPrevState | rdma.EvPolled
				e.SetState(stateOf(r))
				changed = append(changed, e)
				old.SetState(stateOf(r))
				d.res[k] = old
			}
			continue
		}
		if ok {
			destroyed = append(destroyed, gone(old, s.Time))
		}
		e := d.event(r, s.Time)
		d.res[k] = e
		if !d.known[r.Type] {
			e.Kind, e.Flags = rdma.EvExists, e.Flags&^rdma.EvPolled
		}
		created = append(created, e)
	}
	for k, old := range d.res {
		if !seen[k] && !failed[k.typ] {
			destroyed = append(destroyed, gone(old, s.Time))
			delete(d.res, k)
		}
	}
	for _, t := range s.Types {
		if !failed[t] {
			d.known[t] = true
		}
	}
	for _, evs := range [][]rdma.Event{reg, destroyed, changed, created, unreg} {
		slices.SortFunc(evs, byResource)
	}
	return slices.Concat(reg, destroyed, changed, created, unreg)
}

// gone is the destroy of a resource last seen as old.
func gone(old rdma.Event, t time.Time) rdma.Event {
	old.Time, old.Kind = t, rdma.EvDestroy
	old.Flags = old.Flags&^rdma.EvHasPrevState | rdma.EvPolled
	return old
}

// event is a resource's create, as the snapshot at t shows it.
func (d *Differ) event(r *rdma.Resource, t time.Time) rdma.Event {
	e := rdma.Event{Time: t, Kind: rdma.EvCreate, Resource: *r, ID: r.ID(),
		Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvPolled}
	if r.Type == rdma.ResQP {
		e.ID = 0 // a QP's restrack id is not in the dump; lqpn names it
	}
	e.Owner = rdma.Owner{KernName: r.Owner.KernName}
	if r.Given(rdma.HasPID) {
		if d.o.Owner != nil {
			e.Owner = d.o.Owner(r)
		} else {
			e.Owner = rdma.Owner{PID: r.Owner.PID, TID: r.Owner.PID, Comm: r.Owner.Comm}
		}
		e.Owner.KernName = r.Owner.KernName
		e.Flags |= rdma.EvHasOwner | rdma.EvUser
	}
	return e
}

// sameOwner: the resource seen before under this number is held by the
// same thread or module now (numbers are reused once freed).
func sameOwner(old *rdma.Event, r *rdma.Resource) bool {
	if r.Owner.KernName != "" || old.Owner.KernName != "" {
		return r.Owner.KernName == old.Owner.KernName
	}
	return r.Owner.PID == old.Owner.TID
}

// stateOf is a resource's QP or CM state as a number.
func stateOf(r *rdma.Resource) uint8 {
	if r.Type == rdma.ResCMID {
		return uint8(r.CMState)
	}
	return uint8(r.QPState)
}

// byResource orders events by device, type and number.
func byResource(a, b rdma.Event) int {
	return cmp.Or(cmp.Compare(a.DevIndex, b.DevIndex), cmp.Compare(a.DevName, b.DevName),
		cmp.Compare(a.Type, b.Type), cmp.Compare(a.Resource.ID(), b.Resource.ID()))
}
