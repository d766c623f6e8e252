// Package live is why without -r: the tracer's events through why's
// analysis, listed as they go wrong. It is why's own package's neighbour,
// not part of it: the renderers import why's lines, and the tracer's tests
// the renderers.
package live

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// Options are why's live run (why without -r), as the command reads
// them from its flags.
type Options struct {
	// Session is the tracer's run: its hooks, --duration and the ready
	// file.
	Session tracer.SessionOptions
	// Window is the reorder window, in the events' monotonic nanoseconds.
	Window uint64
	// Tick is how often the run looks up from the ring buffer to list
	// the steps overdue.
	Tick time.Duration
}

// Run is why over the tracer's events: the run's one enricher names the
// start snapshot's owners and the tracer's (a busy port's holders too),
// what exists already goes to the live table (a QP made before the run is
// named by its owner when a failure of it names none), and the steps
// unanswered past the analysis's Wait are listed as they become so.
func Run(an *why.Analyzer, o Options, sink why.Sink) error {
	x := enrich.New(enrich.Options{})
	so := o.Session
	so.OnlyProgram, so.ReadyClock, so.DropHint = true, true, "raise --ring-size"
	so.Tracer.Enrich = x.Then(enrich.PortHolders(ports.NewHolderLookup().Names))
	s, err := tracer.NewSession(so)
	if err != nil {
		return err
	}
	defer s.Close()
	clock := s.Clock()
	proc.WarnPIDNamespace(os.Stderr)
	stopped, err := lifecycle.Interruptible(func(ctx context.Context) error {
		_, err := nldev.ExistsEvents(ctx, x, nldev.ExistsOptions{Keep: func(e *rdma.Event) bool { an.Feed(e); return true }})
		return err
	})
	switch {
	case stopped:
		slog.Info("stopped during the snapshot of existing resources, before the watch began")
		return nil
	case err != nil:
		slog.Info(fmt.Sprintf("snapshot of existing resources: %v", err))
	}
	live := why.NewLive(an, o.Window, func(ls []why.Line) error {
		for _, l := range ls {
			if err := sink.Write(l); err != nil {
				return err
			}
		}
		return nil
	})
	return s.Run(tracer.Loop{
		Consumer: tracer.Consumer{
			Event: live.Push,
			Tick: func() {
				now := tracer.Mono()
				_ = live.Tick(now, clock.Wall(now)) // its error ends the run at the next event
				_ = sink.Flush()
			},
			Every: o.Tick,
		},
		End: func() error {
			if err := live.End(time.Now().UTC()); err != nil {
				return err
			}
			return sink.Flush()
		},
	})
}
