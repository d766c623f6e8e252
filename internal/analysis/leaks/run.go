package leaks

import (
	"context"
	"os"
	"time"

	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/lifecycle"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// RunOptions are a live watch's run (leaks without --log), as the
// command reads them from its flags.
type RunOptions struct {
	// Session is the tracer's run: its hooks, --duration, -- CMD (whose
	// presence makes the report a program's) and the ready file.
	Session tracer.SessionOptions
	// Watch are the watch's choices; Program is set from Session.Argv.
	Watch Options
	// Enrich names the owners of the start snapshot and of the tracer's
	// events: one for the run. Stages follow it on the tracer's events (a
	// busy port's holders, named before the holder lets go).
	Enrich *enrich.Enricher
	Stages []enrich.Stage
	// Tick is how often the run looks up from the ring buffer: to put
	// held events in order, name what a blocked unregistration waits for,
	// and notice signals and the program's exit.
	Tick time.Duration
	// Warn writes one line on stderr (what may make the report wrong).
	Warn func(string)
}

// Run is a live watch: the tracer's session on the run lifecycle, the
// snapshot of what exists, the events through Live, and the report
// opened once the tracer is attached (a run that cannot start leaves an
// earlier report as it was). Its error is an *tracer.ExitError of
// ExitLeaked when a leak was reported and the run ended as it should or
// with its program's status; else the run's.
func Run(o RunOptions, open func() (Report, error)) error {
	so := o.Session
	so.ReadyClock, so.DropHint = true, "the report may be incomplete; raise --ring-size"
	so.Tracer.Enrich = o.Enrich.Then(o.Stages...)
	s, err := tracer.NewSession(so)
	if err != nil {
		return err
	}
	defer s.Close()
	report, err := open()
	if err != nil {
		return err
	}
	w := o.Watch
	w.Program = len(so.Argv) > 0
	live := NewLive(w, report, o.Warn)
	proc.WarnPIDNamespace(os.Stderr)
	stopped, err := lifecycle.Interruptible(func(ctx context.Context) error {
		_, err := nldev.ExistsEvents(ctx, o.Enrich, nldev.ExistsOptions{Keep: func(e *rdma.Event) bool { live.Snapshot(e); return true }})
		return err
	})
	switch {
	case stopped:
		o.Warn("stopped during the snapshot of existing resources, before the watch began: nothing was reported")
		return nil
	case err != nil:
		o.Warn("snapshot of existing resources: " + err.Error())
	}
	clock := s.Clock()
	err = s.Run(tracer.Loop{
		Consumer: tracer.Consumer{
			Event: live.Push,
			Tick: func() {
				now := tracer.Mono()
				live.Tick(now, clock.Wall(now))
			},
			Every: o.Tick,
		},
		Program: live.Program,
		End:     func() error { return live.End(time.Now().UTC()) },
	})
	live.Notes()
	if live.Leaks(err) {
		return &tracer.ExitError{Code: ExitLeaked}
	}
	return err
}

// FromLogs is leaks --log: ReadLogs, and how it went as the exit status
// (an *tracer.ExitError): 2 when an input could not be read (what was read
// is shown: the answer is incomplete) or stdin is given twice, ExitLeaked
// when a leak or hang was reported, 1 when lines were not understood.
func FromLogs(o LogOptions, sink LogSink) error {
	inputs := o.Logs
	if o.Recording != "" {
		inputs = append([]string{o.Recording}, o.Logs...)
	}
	if err := lineio.StdinOnce(inputs, "give it to one --log or to --recording"); err != nil {
		return &tracer.ExitError{Code: 2, Err: err}
	}
	res, err := ReadLogs(o, sink)
	switch {
	case err != nil:
		return err
	case res.Failed > 0:
		return &tracer.ExitError{Code: 2}
	case res.Reports > 0:
		return &tracer.ExitError{Code: ExitLeaked}
	case res.Bad > 0:
		return &tracer.ExitError{Code: 1}
	}
	return nil
}
