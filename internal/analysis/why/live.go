package why

import (
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/restable"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Live is why over a tracer's stream: events from several CPUs are put
// back in time order (a reorder window, in the events' monotonic
// nanoseconds) before the analysis follows an ID from step to step, and
// the steps unanswered past Wait are listed at each tick. Its lines go to
// write; the first error of write ends the listing and is returned from
// then on.
type Live struct {
	an      *Analyzer
	reorder *restable.Reorder
	window  uint64
	write   func([]Line) error
	err     error
}

// NewLive feeds an through a reorder window of window ns.
func NewLive(an *Analyzer, window uint64, write func([]Line) error) *Live {
	return &Live{an: an, reorder: restable.NewReorder(window), window: window, write: write}
}

// Push takes the next event as the tracer read it.
func (l *Live) Push(e *rdma.Event) error {
	l.reorder.Push(e, l.feed)
	return l.err
}

// Tick feeds what has left the window at mono (the monotonic clock's
// now, at wall), and lists the steps overdue at wall.
func (l *Live) Tick(mono uint64, wall time.Time) error {
	if mono > l.window {
		l.reorder.FlushUntil(mono-l.window, l.feed)
	}
	if l.err == nil {
		l.err = l.write(l.an.Overdue(wall))
	}
	return l.err
}

// End feeds what the window holds, then lists the steps still unanswered
// at now.
func (l *Live) End(now time.Time) error {
	l.reorder.Flush(l.feed)
	if l.err != nil {
		return l.err
	}
	return l.write(l.an.End(now))
}

func (l *Live) feed(e *rdma.Event) {
	if l.err == nil {
		l.err = l.write(l.an.Feed(e))
	}
}
