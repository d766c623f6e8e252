package lifecycle

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

func TestInterruptibleStopsAtASignal(t *testing.T) {
	stopped, err := Interruptible(func(ctx context.Context) error {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("the signal did not cancel the context")
		}
	})
	if !stopped || !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped %v, err %v; want true, context.Canceled", stopped, err)
	}
}

func TestInterruptibleWithoutASignal(t *testing.T) {
	want := errors.New("listing failed")
	stopped, err := Interruptible(func(ctx context.Context) error { return want })
	if stopped || err != want {
		t.Fatalf("stopped %v, err %v; want false, %v", stopped, err, want)
	}
}
