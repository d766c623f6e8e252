package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestASecondInterruptExitsAtOnceWith130(t *testing.T) {
	codes := make(chan int, 1)
	exit = func(code int) { codes <- code }
	defer func() { exit = os.Exit }()
	firsts := make(chan os.Signal, 2)
	release := onInterrupt(func(s os.Signal) { firsts <- s })
	defer release()

	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case s := <-firsts:
		if s != syscall.SIGINT {
			t.Errorf("first got %v, want SIGINT", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGINT did not call first")
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code := <-codes:
		if code != 130 {
			t.Errorf("the second SIGINT exited with %d, want 130", code)
		}
	case s := <-firsts:
		t.Fatalf("the second signal (%v) called first again instead of exiting", s)
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGINT did not exit")
	}
}
