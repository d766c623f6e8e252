// Package restable keeps the table of live RDMA resources that rdmatrace
// builds from a netlink snapshot and the traced events: who holds what,
// since when. It is bounded, survives ids the kernel reuses, and applies
// events in timestamp order (see Reorder).
package restable

import (
	"sort"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Key names a resource the way the kernel's restrack does: by device,
// type and id. QPs are named by lqpn and port (GSI and SMI QPs have the
// same lqpn on every port); rdma_cm IDs bound to no device by address,
// under NoDevice.
type Key struct {
	Dev uint32 // device index, or NoDevice
	Res rdma.ResType
	Num uint64
}

// NoDevice is the Dev of an rdma_cm ID bound to no device (a wildcard
// listener, an ID before rdma_resolve_addr or rdma_bind_addr). It cannot be
// a device's index: ib_core allocates those in [0, 2^31) (xa_limit_31b),
// and 0 is the first device's.
const NoDevice = ^uint32(0)

// Bound tells whether the key's resource is on a device.
func (k Key) Bound() bool { return k.Dev != NoDevice }

// KeyOf returns the key of the resource an event is about, and false when
// the event is not about one resource.
func KeyOf(e *rdma.Event) (Key, bool) {
	switch {
	case e.Kind == rdma.EvCMIDCreate || (e.Kind == rdma.EvCMIDDestroy && !e.Has(rdma.EvHasDev)) ||
		(e.Type == rdma.ResCMID && e.Has(rdma.EvHasRes) && !e.Has(rdma.EvHasDev)):
		// An ID bound to no device, by its address: its create, destroy,
		// and the rdma_cma events of its life (a wildcard's listen).
		return Key{Dev: NoDevice, Res: rdma.ResCMID, Num: e.Obj}, e.Obj != 0
	case !e.Has(rdma.EvHasRes) || !e.Has(rdma.EvHasDev):
		return Key{}, false
	case e.Type == rdma.ResQP:
		if !e.Given(rdma.HasLQPN) {
			return Key{}, false
		}
		num := uint64(e.LQPN)
		if e.QPType == rdma.QPTypeGSI || e.QPType == rdma.QPTypeSMI {
			num |= uint64(e.Port) << 32
		}
		return Key{Dev: e.DevIndex, Res: rdma.ResQP, Num: num}, true
	}
	return Key{Dev: e.DevIndex, Res: e.Type, Num: uint64(e.ID)}, true
}

// Entry is a live resource. Res holds what the tracer knows of it (device,
// ids, QP type and state, owner), as in its most recent event.
type Entry struct {
	Key
	Res Res
	// Created is when the kernel started tracking it; for a resource from
	// the snapshot, when tracing started (PreExisting: it is older).
	Created     time.Time
	PreExisting bool
	Destroying  bool // destruction began (destroy_begin) and has not finished
}

// Age is how old the entry is at now.
func (e *Entry) Age(now time.Time) time.Duration { return now.Sub(e.Created) }

// Op is what an event did to the table.
type Op uint8

const (
	OpNone     Op = iota // nothing: not a resource event, or an unknown resource
	OpAdded              // a new entry
	OpReplaced           // a new entry where one with the same key was: its destroy was not seen
	OpUpdated            // a state change or destroy_begin/abort of a known entry
	OpRemoved            // the entry is gone
	OpFull               // a new resource that did not fit: counted as untracked
)

// Table is the live resource table.
type Table struct {
	max       int
	entries   map[Key]*Entry
	untracked uint64
	replaced  uint64
}

// New returns a table holding at most max entries.
func New(max int) *Table { return &Table{max: max, entries: make(map[Key]*Entry)} }

// Len is the number of live entries.
func (t *Table) Len() int { return len(t.entries) }

// Untracked counts resources that were created while the table was full.
func (t *Table) Untracked() uint64 { return t.untracked }

// Replaced counts creations that found their key taken (an id the kernel
// reused after a destroy the tracer did not see, e.g. a dropped event).
func (t *Table) Replaced() uint64 { return t.replaced }

// Apply updates the table with one event, which must come in timestamp
// order, and returns what it did and the entry concerned (for OpRemoved,
// the entry as it was).
func (t *Table) Apply(e *rdma.Event) (Op, *Entry) {
	k, ok := KeyOf(e)
	if !ok {
		return OpNone, nil
	}
	old := t.entries[k]
	switch e.Kind {
	case rdma.EvCreate, rdma.EvExists, rdma.EvCMIDCreate:
		if e.Kind == rdma.EvCreate && e.Type == rdma.ResCMID {
			// The ID was known unbound, by address: it is bound now.
			delete(t.entries, Key{Dev: NoDevice, Res: rdma.ResCMID, Num: e.Obj})
		}
		if e.Kind == rdma.EvExists && old != nil {
			return OpNone, old // a snapshot taken after the trace began
		}
		if old == nil && len(t.entries) >= t.max {
			t.untracked++
			return OpFull, nil
		}
		n := &Entry{Key: k, Res: resOf(e), Created: e.Time, PreExisting: e.Kind == rdma.EvExists}
		t.entries[k] = n
		if old != nil && !old.PreExisting {
			// A snapshot entry is the same resource when its creation was
			// traced between attach and snapshot; anything else is an id
			// reused after a destroy that was not seen.
			t.replaced++
			return OpReplaced, n
		}
		return OpAdded, n
	case rdma.EvDestroy, rdma.EvCMIDDestroy:
		if old == nil {
			return OpNone, nil
		}
		if e.Kind == rdma.EvCMIDDestroy && k.Bound() {
			// rdma_destroy_id of a bound ID: its restrack del follows.
			return OpNone, old
		}
		delete(t.entries, k)
		return OpRemoved, old
	case rdma.EvDestroyBegin, rdma.EvDestroyAbort:
		if old == nil {
			return OpNone, nil
		}
		old.Destroying = e.Kind == rdma.EvDestroyBegin
		return OpUpdated, old
	case rdma.EvModify:
		if old == nil || !e.Given(rdma.HasState) {
			return OpNone, old
		}
		old.Res.SetState(e.State())
		return OpUpdated, old
	}
	if old != nil && e.Type == rdma.ResCMID && e.Given(rdma.HasState) {
		// rdma_cma tracepoints carry the ID's current state.
		old.Res.SetState(e.State())
		if e.Given(rdma.HasSrcAddr) {
			old.Res.Src, old.Res.Dst, old.Res.PS = e.Src, e.Dst, e.PS
			old.Res.Fields |= rdma.HasSrcAddr | rdma.HasPS
		}
		return OpUpdated, old
	}
	return OpNone, old
}

// RemoveDevice drops every entry of a device that is gone and returns them.
// IDs bound to no device stay: they were never on it.
func (t *Table) RemoveDevice(dev uint32) []*Entry {
	if dev == NoDevice {
		return nil
	}
	var out []*Entry
	for k, e := range t.entries {
		if k.Dev == dev {
			out = append(out, e)
			delete(t.entries, k)
		}
	}
	Sort(out)
	return out
}

// Select returns the entries for which keep is true, sorted.
func (t *Table) Select(keep func(*Entry) bool) []*Entry {
	var out []*Entry
	for _, e := range t.entries {
		if keep(e) {
			out = append(out, e)
		}
	}
	Sort(out)
	return out
}

// Sort orders entries by owner, device, type and id, so that a report
// groups what each owner holds.
func Sort(es []*Entry) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if oa, ob := ownerKey(a), ownerKey(b); oa != ob {
			return oa < ob
		}
		if a.Res.DevName != b.Res.DevName {
			return a.Res.DevName < b.Res.DevName
		}
		if a.Res.Type != b.Res.Type {
			return a.Res.Type < b.Res.Type
		}
		return a.Num < b.Num
	})
}

// ownerKey sorts user owners by pid, then kernel owners by module.
func ownerKey(e *Entry) string {
	if e.Res.Has(rdma.EvHasOwner) {
		return "0" + leftPad(e.Res.Owner.PID)
	}
	return "1" + e.Res.Owner.KernName
}

func leftPad(n uint32) string {
	const digits = "0000000000"
	s := []byte(digits)
	for i := len(s) - 1; n > 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}
