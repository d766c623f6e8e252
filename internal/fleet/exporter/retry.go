package exporter

import (
	"cmp"
	"context"
	"strings"
	"time"
)

// Retry keeps a part of the exporter that may not start on every node
// (the tracer: no ib_core yet, no module BTF, no privileges, a verifier
// that refuses a program) running: it starts it, and when it cannot or
// when it stops, starts it again after a backoff, while the rest of the
// exporter serves. Its log says each change of state once, not each try.
type Retry struct {
	Part   string  // its name in rdmatrace_part_up and the log
	Health *Health // told whether the part is up (nil: nobody)
	// Start starts the part: run blocks until it stops by itself or stop
	// is called; err says why it could not start. A start that has not
	// returned when ctx ends is left behind (Run returns at once), and
	// stopped if it starts after all.
	Start func(ctx context.Context) (run func() error, stop func(), err error)
	// Probe is a cheap look at what Start depends on (the preflight's
	// problems): when it changes, a waiting Retry tries at once, and a
	// running part is restarted (a module loaded since it started gives
	// it more hooks). nil: no probe.
	Probe      func() string
	ProbeEvery time.Duration // 5 s when 0
	// Backoff after a failure: Min, doubled at each failure up to Max
	// (1 s and 1 min when 0).
	Min, Max time.Duration
	// Log takes the lines: the part's first failure, a change in why it
	// fails, its start after failing, its stop.
	Log func(msg string)
	// Attempted, when set, is called once after the first try, whether
	// it started or not (the exporter is ready then).
	Attempted func()
}

// Run keeps the part running until ctx ends.
func (r *Retry) Run(ctx context.Context) {
	every := cmp.Or(r.ProbeEvery, 5*time.Second)
	lo, hi := cmp.Or(r.Min, time.Second), cmp.Or(r.Max, time.Minute)
	probe := func() string {
		if r.Probe == nil {
			return ""
		}
		return shape(r.Probe())
	}
	log := func(msg string) {
		if r.Log != nil {
			r.Log(msg)
		}
	}
	setUp := func(up bool) {
		if r.Health != nil {
			r.Health.Set(r.Part, up)
		}
	}
	wait, lastFail, first, failed := lo, "", true, false
	for ctx.Err() == nil {
		before := probe()
		run, stop, err, ok := r.start(ctx)
		if !ok {
			return
		}
		if err != nil {
			setUp(false)
			if s := shape(err.Error()); s != lastFail {
				log(r.Part + " cannot start: " + err.Error() + "; serving without it, trying again (logged again when this changes)")
				lastFail = s
			}
			failed = true
			if first && r.Attempted != nil {
				r.Attempted()
				first = false
			}
			// Wait the backoff, or less when what the start depends on
			// changes (a module loaded, BTF appeared).
			t := time.NewTimer(wait)
			tick := time.NewTicker(every)
		waiting:
			for {
				select {
				case <-ctx.Done():
					t.Stop()
					tick.Stop()
					return
				case <-t.C:
					break waiting
				case <-tick.C:
					if probe() != before {
						break waiting
					}
				}
			}
			t.Stop()
			tick.Stop()
			wait = min(2*wait, hi)
			continue
		}
		setUp(true)
		if failed {
			log(r.Part + " started")
		}
		failed, lastFail, wait = false, "", lo
		if first && r.Attempted != nil {
			r.Attempted()
			first = false
		}
		done := make(chan error, 1)
		go func() { done <- run() }()
		tick := time.NewTicker(every)
		var runErr error
		restart := false
	running:
		for {
			select {
			case <-ctx.Done():
				stop()
				<-done
				tick.Stop()
				setUp(false)
				return
			case runErr = <-done:
				break running
			case <-tick.C:
				if p := probe(); p != before {
					log(r.Part + ": the system changed since it started; restarting it")
					restart = true
					stop()
					runErr = <-done
					break running
				}
			}
		}
		tick.Stop()
		setUp(false)
		if ctx.Err() != nil {
			return
		}
		if !restart {
			msg := "stopped"
			if runErr != nil {
				msg = "stopped: " + runErr.Error()
			}
			log(r.Part + " " + msg + "; trying again")
			failed = true
			// Not at once: a part that stops as soon as it starts must
			// not spin.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, hi)
		}
	}
}

// start runs Start, and gives up waiting for it when ctx ends (ok
// false): a tracer's load takes seconds, a snapshot of a large inventory
// minutes, and a SIGTERM must not wait for them.
func (r *Retry) start(ctx context.Context) (run func() error, stop func(), err error, ok bool) {
	type started struct {
		run  func() error
		stop func()
		err  error
	}
	done := make(chan started, 1)
	go func() {
		run, stop, err := r.Start(ctx)
		done <- started{run, stop, err}
	}()
	select {
	case s := <-done:
		return s.run, s.stop, s.err, true
	case <-ctx.Done():
		go func() {
			if s := <-done; s.err == nil {
				s.stop()
				_ = s.run() // returns at once, and closes
			}
		}()
		return nil, nil, nil, false
	}
}

// shape is a message with its numbers as '#': two failures that differ
// only in a count or an address are one state.
func shape(msg string) string {
	var b strings.Builder
	digits := false
	for _, c := range msg {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
	}
	return b.String()
}
