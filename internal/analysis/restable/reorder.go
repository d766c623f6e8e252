package restable

import "github.com/rdmatrace/rdmatrace/internal/rdma"

// DefaultMaxHeld bounds the events a Reorder holds: 2.6 times the 50 000
// that a 50 ms window holds at 1 M events/s, about 120 MB when full (an
// rdma.Event is about 900 bytes).
const DefaultMaxHeld = 1 << 17

// Reorder puts events back in timestamp order. The ring buffer is shared
// by all CPUs in reservation order, and a record's timestamp is taken just
// before its reservation, so two CPUs can swap events by a little: a
// destroy may arrive before the create it follows. Reorder holds events
// for a window (of monotonic time, behind the newest event seen) and
// releases them sorted; events with equal timestamps keep their arrival
// order. It also holds at most a number of events (equal timestamps would
// otherwise hold them all): past it the oldest goes out early, counted.
//
// The events sit in slots that do not move; a binary heap of small keys
// orders them, so a push or a release costs O(log held), not a copy of
// the window.
type Reorder struct {
	window   uint64
	max      int
	newest   uint64
	seq      uint64
	slots    []rdma.Event
	free     []int32
	heap     []reorderKey
	overflow uint64
}

type reorderKey struct {
	mono, seq uint64
	slot      int32
}

func (a reorderKey) less(b reorderKey) bool {
	return a.mono < b.mono || a.mono == b.mono && a.seq < b.seq
}

// NewReorder returns a Reorder holding events for window nanoseconds, and
// at most DefaultMaxHeld of them.
func NewReorder(window uint64) *Reorder { return &Reorder{window: window, max: DefaultMaxHeld} }

// limit sets the most events held (at least 1).
func (r *Reorder) limit(n int) { r.max = max(n, 1) }

// Push adds an event and passes every event that is older than the
// window behind it, in order, to out. out must not keep the pointer.
func (r *Reorder) Push(e *rdma.Event, out func(*rdma.Event)) {
	var slot int32
	if n := len(r.free); n > 0 {
		slot, r.free = r.free[n-1], r.free[:n-1]
		r.slots[slot] = *e
	} else {
		slot = int32(len(r.slots))
		r.slots = append(r.slots, *e)
	}
	r.seq++
	r.heap = append(r.heap, reorderKey{mono: e.Mono, seq: r.seq, slot: slot})
	r.up(len(r.heap) - 1)
	r.newest = max(r.newest, e.Mono)
	for len(r.heap) > r.max {
		r.overflow++
		r.pop(out)
	}
	if r.newest >= r.window {
		r.release(r.newest-r.window, out)
	}
}

// Flush passes every held event to out, in order. Call it before a report.
func (r *Reorder) Flush(out func(*rdma.Event)) { r.release(^uint64(0), out) }

// FlushUntil passes the held events up to mono (inclusive), in order.
func (r *Reorder) FlushUntil(mono uint64, out func(*rdma.Event)) { r.release(mono, out) }

// Len is the number of events held.
func (r *Reorder) Len() int { return len(r.heap) }

// Overflowed is how many events went out before their window had passed
// because the count bound was reached: their order may be wrong.
func (r *Reorder) Overflowed() uint64 { return r.overflow }

func (r *Reorder) release(upTo uint64, out func(*rdma.Event)) {
	for len(r.heap) > 0 && r.heap[0].mono <= upTo {
		r.pop(out)
	}
}

// pop passes the oldest event to out and frees its slot.
func (r *Reorder) pop(out func(*rdma.Event)) {
	top := r.heap[0]
	last := len(r.heap) - 1
	r.heap[0] = r.heap[last]
	r.heap = r.heap[:last]
	if last > 0 {
		r.down(0)
	}
	out(&r.slots[top.slot])
	r.slots[top.slot] = rdma.Event{} // drop its strings
	r.free = append(r.free, top.slot)
}

func (r *Reorder) up(i int) {
	h := r.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (r *Reorder) down(i int) {
	h := r.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].less(h[c]) {
			c++
		}
		if !h[c].less(h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
