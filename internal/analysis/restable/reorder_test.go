package restable

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// benchReorder pushes events arriving at rate per second through the 50 ms
// window leaks uses, every 16th a little late (as two CPUs' reservations
// can swap), and reports the cost per event.
func benchReorder(b *testing.B, rate int) {
	r := NewReorder(uint64(50 * time.Millisecond))
	step := uint64(time.Second) / uint64(rate)
	var e rdma.Event
	out := func(*rdma.Event) {}
	i := uint64(0)
	// Fill the window first: the steady state is what is measured.
	for ; i < uint64(rate)/20; i++ {
		e.Mono = (i + 1) * step
		r.Push(&e, out)
	}
	b.ResetTimer()
	for b.Loop() {
		i++
		e.Mono = (i + 1) * step
		if i%16 == 0 {
			e.Mono -= 10 * step
		}
		r.Push(&e, out)
	}
	b.ReportMetric(float64(r.Len()), "held")
}

func BenchmarkReorder50kPerSecond(b *testing.B) { benchReorder(b, 50_000) }
func BenchmarkReorder1MPerSecond(b *testing.B)  { benchReorder(b, 1_000_000) }

// At 1 M events/s the 50 ms window holds 50 000 events. Reorder once
// copied the whole window at every event (600 µs each here: 200 000
// events would take two minutes); it must keep up with the tracer, which
// delivers more than 1 M events/s. The bound leaves a wide margin for a
// loaded machine (a heap takes well under 1 µs per event).
func TestReorderKeepsUpWithAMillionEventsPerSecond(t *testing.T) {
	r := NewReorder(uint64(50 * time.Millisecond))
	const n = 200_000
	step := uint64(time.Microsecond)
	var e rdma.Event
	released := 0
	start := time.Now()
	for i := uint64(0); i < n; i++ {
		e.Mono = (i + 1) * step
		r.Push(&e, func(*rdma.Event) { released++ })
		if i%1000 == 0 && time.Since(start) > 5*time.Second {
			t.Fatalf("%d events in %v: %.0f events/s", i, time.Since(start), float64(i)/time.Since(start).Seconds())
		}
	}
	r.Flush(func(*rdma.Event) { released++ })
	if released != n {
		t.Errorf("released %d of %d events", released, n)
	}
}

// Equal timestamps (a recording whose clock stood still, or one made up)
// must not grow the window without bound: past the count bound the oldest
// goes out, counted, and order is still kept.
func TestReorderIsBoundedByCountToo(t *testing.T) {
	r := NewReorder(uint64(50 * time.Millisecond))
	n := DefaultMaxHeld + 1000
	var e rdma.Event
	e.Mono = uint64(time.Second)
	next := uint32(0)
	for i := 0; i < n; i++ {
		e.ID = uint32(i)
		r.Push(&e, func(o *rdma.Event) {
			if o.ID != next {
				t.Fatalf("released id %d, want %d (arrival order)", o.ID, next)
			}
			next++
		})
		if r.Len() > DefaultMaxHeld {
			t.Fatalf("holds %d events after %d, bound %d", r.Len(), i+1, DefaultMaxHeld)
		}
	}
	if r.Overflowed() != 1000 || next != 1000 {
		t.Errorf("released early %d (counted %d), want 1000", next, r.Overflowed())
	}
}

// Events with equal timestamps keep the order they arrived in, whatever
// the order of the others around them.
func TestReorderIsStable(t *testing.T) {
	r := NewReorder(uint64(10 * time.Millisecond))
	r.limit(4) // small enough that overflow releases take part
	var got []string
	collect := func(e *rdma.Event) { got = append(got, fmt.Sprintf("%d.%d", e.Mono/uint64(time.Millisecond), e.ID)) }
	arrivals := []struct{ ms, id int }{{5, 0}, {3, 1}, {5, 2}, {3, 3}, {5, 4}, {1, 5}, {3, 6}, {30, 7}, {30, 8}, {29, 9}}
	for _, a := range arrivals {
		e := rdma.Event{Mono: uint64(a.ms) * uint64(time.Millisecond), ID: uint32(a.id)}
		r.Push(&e, collect)
	}
	r.Flush(collect)
	// The 5th arrival overflows 4 slots: 3.1 goes (the oldest held), then
	// 1.5, 3.3 and 3.6 on the next three; 30.7 releases what is 10 ms
	// older (the 5s, in arrival order).
	want := "[3.1 1.5 3.3 3.6 5.0 5.2 5.4 29.9 30.7 30.8]"
	if fmt.Sprint(got) != want {
		t.Errorf("released %v, want %s", got, want)
	}
	if r.Overflowed() != 4 {
		t.Errorf("overflowed %d, want 4", r.Overflowed())
	}
}
