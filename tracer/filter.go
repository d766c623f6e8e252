package tracer

import (
	"fmt"
)

// Filter bits of the filter_on map (FILTER_* in the BPF C).
const (
	filterPIDs    = 1 << 0
	filterCgroups = 1 << 1
)

// OnlyPIDs keeps, in the kernel, only the events whose owner process or
// thread is one of pids (events without an owner still pass): the others
// never reach the ring buffer's reader. Call before Run; it replaces an
// earlier set.
func (t *Tracer) OnlyPIDs(pids []uint32) error {
	if err := refill(t, "filter_pids", pids); err != nil {
		return fmt.Errorf("pid filter: %w", err)
	}
	return t.setFilter(filterPIDs)
}

// OnlyCgroups keeps only the events whose owner was in one of the cgroups
// (v2 ids) when the event happened. It may be called again while Run reads,
// e.g. as containers start: the set is replaced.
func (t *Tracer) OnlyCgroups(ids []uint64) error {
	if err := refill(t, "filter_cgroups", ids); err != nil {
		return fmt.Errorf("cgroup filter: %w", err)
	}
	return t.setFilter(filterCgroups)
}

// refill makes the hash map name hold exactly keys.
func refill[K comparable](t *Tracer, name string, keys []K) error {
	m := t.maps[name]
	if m == nil {
		return fmt.Errorf("no map %s", name)
	}
	if uint32(len(keys)) > m.MaxEntries() {
		return fmt.Errorf("%d entries, the map holds %d", len(keys), m.MaxEntries())
	}
	want := make(map[K]bool, len(keys))
	for _, k := range keys {
		want[k] = true
		if err := m.Put(k, uint8(1)); err != nil {
			return err
		}
	}
	var k K
	var v uint8
	var stale []K
	it := m.Iterate()
	for it.Next(&k, &v) {
		if !want[k] {
			stale = append(stale, k)
		}
	}
	for _, k := range stale {
		_ = m.Delete(k)
	}
	return it.Err()
}

func (t *Tracer) setFilter(bit uint32) error {
	m := t.maps["filter_on"]
	var on uint32
	if err := m.Lookup(uint32(0), &on); err != nil {
		return err
	}
	return m.Put(uint32(0), on|bit)
}

// Filtered is how many events the kernel discarded for OnlyPIDs and
// OnlyCgroups.
func (t *Tracer) Filtered() (uint64, error) { return t.perCPUSum("filtered") }
