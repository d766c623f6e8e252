//go:build e2e

package e2e

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// pinSchedTracepoints keeps a no-op program on sched_switch and
// sched_wakeup for the whole suite, so that the traced rdmabench runs'
// attach and detach do not switch those tracepoints' static keys. Each
// switch patches the scheduler's text (an int3, then the jump), and
// qemu's TCG, both vCPUs busy-polling, once ran a stale int3 in
// try_to_wake_up (6.12: "Oops: int3", during a traced lat). Hardware
// patches its text coherently; the pin keeps the emulator's weakness out
// of what the tests test.
func pinSchedTracepoints() (unpin func(), err error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "e2e_sched_pin", Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return nil, err
	}
	var links []link.Link
	unpin = func() {
		for _, l := range links {
			l.Close()
		}
		prog.Close()
	}
	for _, tp := range []string{"sched_switch", "sched_wakeup"} {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
		if err != nil {
			unpin()
			return nil, err
		}
		links = append(links, l)
	}
	return unpin, nil
}
