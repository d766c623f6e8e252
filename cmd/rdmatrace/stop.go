package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// exit is os.Exit, replaced in tests.
var exit = os.Exit

// onInterrupt calls first at the first SIGINT or SIGTERM (the command then
// stops in order: reads what is queued, prints its summary). A second one
// ends the process at once with 128+signal, 130 for SIGINT as shells
// expect: a user pressing Ctrl-C again does not want to wait. release
// stops listening.
func onInterrupt(first func(os.Signal)) (release func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case s := <-sigs:
				if n++; n == 1 {
					first(s)
					continue
				}
				fmt.Fprintf(os.Stderr, "rdmatrace: %v again: exiting at once\n", s)
				exit(128 + int(s.(syscall.Signal)))
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
