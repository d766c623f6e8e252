package tracer

import (
	"time"

	"golang.org/x/sys/unix"
)

// Clock converts CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns) to wall time.
type Clock struct{ offset int64 }

// NewClock measures the offset between the two clocks now.
func NewClock() Clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return Clock{offset: time.Now().UnixNano() - ts.Nano()}
}

// Offset is wall minus monotonic time, in ns.
func (c Clock) Offset() int64 { return c.offset }

// Wall gives the wall time of a monotonic timestamp.
func (c Clock) Wall(mono uint64) time.Time { return time.Unix(0, int64(mono)+c.offset).UTC() }

// Mono is the kernel's monotonic clock now, as bpf_ktime_get_ns counts it.
func Mono() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}
