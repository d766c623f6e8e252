package lifecycle

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// interrupts sets up onInterrupt with a clock that the test moves: each
// signal read takes the next time from the returned channel.
func interrupts(t *testing.T) (firsts chan os.Signal, codes chan int, times chan time.Time, atOnceRan chan bool) {
	t.Helper()
	codes = make(chan int, 4)
	times = make(chan time.Time)
	atOnceRan = make(chan bool, 4)
	exit = func(code int) { codes <- code }
	signalClock = func() time.Time { return <-times }
	setAtOnce(func() { atOnceRan <- true })
	firsts = make(chan os.Signal, 4)
	release := onInterrupt(func(s os.Signal) { firsts <- s })
	t.Cleanup(func() {
		release()
		exit, signalClock = os.Exit, time.Now
		setAtOnce(nil)
	})
	return firsts, codes, times, atOnceRan
}

// send delivers sig to this process and gives its reading the time at.
func send(t *testing.T, sig syscall.Signal, times chan time.Time, at time.Time) {
	t.Helper()
	syscall.Kill(os.Getpid(), sig)
	select {
	case times <- at:
	case <-time.After(5 * time.Second):
		t.Fatalf("%v was not read", sig)
	}
}

func TestASecondInterruptExitsAtOnceWith130(t *testing.T) {
	firsts, codes, times, atOnceRan := interrupts(t)
	t0 := time.Unix(1000, 0)
	send(t, syscall.SIGINT, times, t0)
	select {
	case s := <-firsts:
		if s != syscall.SIGINT {
			t.Errorf("first got %v, want SIGINT", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGINT did not call first")
	}
	send(t, syscall.SIGINT, times, t0.Add(2*time.Second))
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
	select {
	case <-atOnceRan:
	default:
		t.Error("exiting at once did not first remove the program's cgroup")
	}
}

// GNU timeout sends SIGTERM to rdmatrace, then to its process group:
// rdmatrace gets it twice within microseconds. That is one request, and
// the orderly stop (the recording's flush, the summary, the program's
// cgroup) must not be cut short.
func TestADuplicatedSignalIsNotAgain(t *testing.T) {
	firsts, codes, times, _ := interrupts(t)
	t0 := time.Unix(1000, 0)
	send(t, syscall.SIGTERM, times, t0)
	send(t, syscall.SIGTERM, times, t0.Add(time.Millisecond))
	send(t, syscall.SIGTERM, times, t0.Add(againAfter-time.Millisecond))
	if s := <-firsts; s != syscall.SIGTERM {
		t.Errorf("first got %v, want SIGTERM", s)
	}
	select {
	case code := <-codes:
		t.Fatalf("a SIGTERM within %v of the first exited at once with %d", againAfter, code)
	case s := <-firsts:
		t.Fatalf("a duplicate (%v) called first again", s)
	default:
	}
	// One well after the first is a second request.
	send(t, syscall.SIGTERM, times, t0.Add(againAfter))
	select {
	case code := <-codes:
		if code != 143 {
			t.Errorf("SIGTERM again exited with %d, want 143", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a SIGTERM well after the first did not exit")
	}
}
