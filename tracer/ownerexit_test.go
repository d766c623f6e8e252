package tracer

import (
	"os"
	"testing"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestAReleaseWhileTheOwnersProcessExitsIsItsExitCleanup: the BPF side
// says whether the owner's process was exiting (F_OWNER_EXITING), and a
// file release with it set is the exit's cleanup ("exit") whoever let go
// of the file last: the owner itself, or another process, the tracer
// among them (its --stacks read of the owner's memory map held the
// file's last references). Without the flag a release stays a close, in
// the tracer's own thread too: the tracer's pid decides nothing. An
// explicit destroy while the owner exits is none of these.
func TestAReleaseWhileTheOwnersProcessExitsIsItsExitCleanup(t *testing.T) {
	self := uint32(os.Getpid())
	for _, tc := range []struct {
		name  string
		flags bpf.RdmatraceEventFlag
		actor uint32
		want  string
	}{
		{"released by the exiting owner", cfClosing | cfOwnerExit | cfExiting, 300, "exit"},
		{"released by the tracer while the owner exits", cfClosing | cfOwnerExit, self, "exit"},
		{"released by another process while the owner exits", cfClosing | cfOwnerExit, 55, "exit"},
		{"released by the tracer, the owner alive", cfClosing, self, "close"},
		{"closed by the owner", cfClosing, 300, "close"},
		{"destroyed by another thread while the owner exits", cfOwnerExit, 301, ""},
		{"destroyed by the owner", 0, 300, ""},
	} {
		var r bpf.RdmatraceResEvent
		r.H.Kind, r.H.Flags = uint32(cResDel), uint32(tc.flags|cfHasOwner)
		r.H.OwnerPid, r.H.OwnerTid = 300, 300
		r.H.ActorPid, r.H.ActorTid = tc.actor, tc.actor
		var ev rdma.Event
		if err := NewDecoder(Clock{}).Decode(bytesOf(&r), &ev); err != nil {
			t.Fatal(err)
		}
		if got := ev.Cleanup(); got != tc.want {
			t.Errorf("%s (actor %d, owner 300): cleanup %q, want %q", tc.name, tc.actor, got, tc.want)
		}
	}
}
