package lifecycle

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// exit is os.Exit, replaced in tests.
var exit = os.Exit

// signalClock tells when a signal was read; replaced in tests.
var signalClock = time.Now

// againAfter is how long after the first stop signal another one means
// "again". A sooner one is the first request delivered twice: GNU
// timeout sends its signal to rdmatrace and then to rdmatrace's whole
// process group, and a script may do the same. A user who presses Ctrl-C
// a second time to hurry is slower than this.
const againAfter = 500 * time.Millisecond

// atOnce runs on the at-once path before rdmatrace exits: it kills and
// removes the program's cgroup (set by startProgram, cleared by
// endProgram). Nothing else of the orderly stop runs.
var atOnce struct {
	mu sync.Mutex
	fn func()
}

func setAtOnce(fn func()) {
	atOnce.mu.Lock()
	atOnce.fn = fn
	atOnce.mu.Unlock()
}

// onInterrupt calls first at the first SIGINT or SIGTERM (the command then
// stops in order: reads what is queued, prints its summary). One that
// comes againAfter or more later ends the process at once with
// 128+signal, 130 for SIGINT as shells expect: a user pressing Ctrl-C
// again does not want to wait. One sooner is the first delivered twice,
// and is ignored. release stops listening.
func onInterrupt(first func(os.Signal)) (release func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var firstAt time.Time
		for {
			select {
			case s := <-sigs:
				now := signalClock()
				if firstAt.IsZero() {
					firstAt = now
					// Not in this loop: a duplicate that arrives meanwhile
					// is read, and timed, as it comes.
					go first(s)
					continue
				}
				if now.Sub(firstAt) < againAfter {
					continue
				}
				fmt.Fprintf(os.Stderr, "rdmatrace: %v again: exiting at once\n", s)
				atOnce.mu.Lock()
				if atOnce.fn != nil {
					atOnce.fn()
				}
				exit(128 + int(s.(syscall.Signal)))
				atOnce.mu.Unlock() // only when exit is a test's
				return
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// Interruptible runs f with a context that a SIGINT or SIGTERM cancels:
// what a command does before its run catches signals (a start snapshot
// of a node's objects takes seconds to list) stops at one as the run
// would. stopped says a signal came.
func Interruptible(f func(ctx context.Context) error) (stopped bool, err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = f(ctx)
	return ctx.Err() != nil, err
}
