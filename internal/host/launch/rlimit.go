package launch

import "golang.org/x/sys/unix"

// origMemlock is RLIMIT_MEMLOCK as rdmatrace found it, before loading the
// tracer raised it (cilium/ebpf does on kernels that charge BPF memory to
// it, before 5.11).
var origMemlock unix.Rlimit

func init() { _ = unix.Getrlimit(unix.RLIMIT_MEMLOCK, &origMemlock) }

// RestoreMemlock puts RLIMIT_MEMLOCK back to what rdmatrace started with,
// so that the program inherits that, not the unlimited one the tracer
// needed: registering memory regions pins pages against this limit, and a
// program tested with an unlimited one hides its real runs' failures.
// Call it once the tracer is loaded: BPF memory is charged when a map or
// program is made, so lowering the limit afterwards costs the tracer nothing.
func RestoreMemlock() error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur); err != nil || cur == origMemlock || origMemlock.Cur == 0 && origMemlock.Max == 0 {
		return err
	}
	return unix.Setrlimit(unix.RLIMIT_MEMLOCK, &origMemlock)
}
