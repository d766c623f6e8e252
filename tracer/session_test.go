package tracer

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// One format for every command: the handle on the first line (the PID
// unless the command names another), then the clock when asked for and a
// tracer is loaded; rdmabench's tracerun reads "clock-offset NS".
func TestReadyFileHasOneFormat(t *testing.T) {
	for _, c := range []struct {
		o    SessionOptions
		want string
	}{
		{SessionOptions{}, strconvPID() + "\n"},
		{SessionOptions{Handle: "127.0.0.1:9879"}, "127.0.0.1:9879\n"},
		{SessionOptions{ReadyClock: true}, strconvPID() + "\n"}, // no tracer, no clock
	} {
		s := &Session{o: c.o}
		if got := s.readyText(); got != c.want {
			t.Errorf("%+v: ready file %q, want %q", c.o, got, c.want)
		}
	}
}

func strconvPID() string { return strconv.Itoa(os.Getpid()) }

// A session's lines while it starts are kept: a failure's error carries
// them without their prefix; once started they are written, and the lines
// after them pass straight on.
func TestStartWriterKeepsTheLinesUntilStarted(t *testing.T) {
	w := &startWriter{}
	w.Write([]byte("rdmatrace: no BTF for rdma_cm\n"))
	w.Write([]byte("rdmatrace: 40 of 44 hooks attached\n\n"))
	if got := strings.Join(w.lines(), "; "); got != "no BTF for rdma_cm; 40 of 44 hooks attached" {
		t.Errorf("kept lines %q", got)
	}
	var out strings.Builder
	w.started(&out)
	w.Write([]byte("rdmatrace: 3 events lost\n"))
	want := "rdmatrace: no BTF for rdma_cm\nrdmatrace: 40 of 44 hooks attached\n\nrdmatrace: 3 events lost\n"
	if out.String() != want {
		t.Errorf("written %q, want %q", out.String(), want)
	}
	if len(w.lines()) != 0 {
		t.Errorf("lines still kept after the start: %q", w.lines())
	}
}

// A hook that could not attach counts as failed; one skipped (its module
// absent) and one attached do not.
func TestHooksFailedCountsOnlyHooksThatCouldNotAttach(t *testing.T) {
	s := &Session{t: &Tracer{Reports: []Report{{Hook: "a", Variant: "fexit"}, {Hook: "b", Skipped: true}, {Hook: "c"}, {Hook: "d"}}}}
	if n := s.HooksFailed(); n != 2 {
		t.Errorf("HooksFailed = %d, want 2", n)
	}
	if n := (&Session{}).HooksFailed(); n != 0 {
		t.Errorf("HooksFailed without a tracer = %d, want 0", n)
	}
}
