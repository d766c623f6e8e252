package restable

import "github.com/rdmatrace/rdmatrace/rdma"

// Reorder puts events back in timestamp order. The ring buffer is shared
// by all CPUs in reservation order, and a record's timestamp is taken just
// before its reservation, so two CPUs can swap events by a little: a
// destroy may arrive before the create it follows. Reorder holds events
// for a window (of monotonic time, behind the newest event seen) and
// releases them sorted.
type Reorder struct {
	window uint64
	buf    []rdma.Event // sorted by Mono
}

// NewReorder returns a Reorder holding events for window nanoseconds.
func NewReorder(window uint64) *Reorder { return &Reorder{window: window} }

// Push adds an event and passes every event that is older than the
// window behind it, in order, to out.
func (r *Reorder) Push(e *rdma.Event, out func(*rdma.Event)) {
	// Events come nearly in order: insert from the end.
	i := len(r.buf)
	for i > 0 && r.buf[i-1].Mono > e.Mono {
		i--
	}
	r.buf = append(r.buf, rdma.Event{})
	copy(r.buf[i+1:], r.buf[i:])
	r.buf[i] = *e
	newest := r.buf[len(r.buf)-1].Mono
	if newest < r.window {
		return
	}
	r.release(newest-r.window, out)
}

// Flush passes every held event to out, in order. Call it before a report.
func (r *Reorder) Flush(out func(*rdma.Event)) { r.release(^uint64(0), out) }

// FlushUntil passes the held events up to mono (inclusive), in order.
func (r *Reorder) FlushUntil(mono uint64, out func(*rdma.Event)) { r.release(mono, out) }

// Len is the number of events held.
func (r *Reorder) Len() int { return len(r.buf) }

func (r *Reorder) release(upTo uint64, out func(*rdma.Event)) {
	n := 0
	for n < len(r.buf) && r.buf[n].Mono <= upTo {
		n++
	}
	if n == 0 {
		return
	}
	done := r.buf[:n]
	for i := range done {
		out(&done[i])
	}
	r.buf = append(r.buf[:0], r.buf[n:]...)
}
