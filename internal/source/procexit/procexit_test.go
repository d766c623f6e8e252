package procexit

import (
	"encoding/binary"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// message builds a connector message holding a proc_event of kind what
// with the given exit fields.
func message(what uint32, pid, tgid, code uint32, mono uint64) []byte {
	b := make([]byte, cnMsgSize+eventHead+exitFields)
	binary.NativeEndian.PutUint32(b[0:], idxProc)
	binary.NativeEndian.PutUint32(b[4:], valProc)
	binary.NativeEndian.PutUint16(b[16:], eventHead+exitFields)
	ev := b[cnMsgSize:]
	binary.NativeEndian.PutUint32(ev[0:], what)
	binary.NativeEndian.PutUint64(ev[8:], mono)
	d := ev[eventHead:]
	binary.NativeEndian.PutUint32(d[0:], pid)
	binary.NativeEndian.PutUint32(d[4:], tgid)
	binary.NativeEndian.PutUint32(d[8:], code)
	binary.NativeEndian.PutUint32(d[12:], 17) // exit_signal: SIGCHLD to the parent
	return b
}

func TestDecodeReadsExitsAndSkipsTheRest(t *testing.T) {
	x, ok, err := Decode(message(eventExit, 4243, 4242, 9, 123456789))
	if err != nil || !ok || x.PID != 4242 || x.TID != 4243 || x.Code != 9 || x.mono != 123456789 {
		t.Fatalf("an exit by SIGKILL: %+v %v %v", x, ok, err)
	}
	if sig, ok := x.Signaled(); !ok || sig != 9 {
		t.Errorf("signaled %d %v, want SIGKILL", sig, ok)
	}
	x, _, _ = Decode(message(eventExit, 1, 1, 3<<8, 1))
	if _, ok := x.Signaled(); ok || x.Status() != 3 {
		t.Errorf("exit(3): code %#x read as signaled or status %d", x.Code, x.Status())
	}
	if _, ok, err := Decode(message(0x00000001 /* PROC_EVENT_FORK */, 1, 1, 0, 1)); ok || err != nil {
		t.Errorf("a fork event: ok %v err %v, want skipped", ok, err)
	}
	other := message(eventExit, 1, 1, 0, 1)
	binary.NativeEndian.PutUint32(other[0:], 7) // another connector's message
	if _, ok, err := Decode(other); ok || err != nil {
		t.Errorf("another connector's message: ok %v err %v, want skipped", ok, err)
	}
}

func TestDecodeSaysWhatIsShort(t *testing.T) {
	full := message(eventExit, 1, 1, 0, 1)
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{full[:10], "shorter than the 20-byte connector header"},
		{full[:cnMsgSize+8], "its header says 40 bytes, 8 follow"},
	} {
		if _, _, err := Decode(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d bytes: %v, want %q", len(tc.b), err, tc.want)
		}
	}
	short := message(eventExit, 1, 1, 0, 1)
	binary.NativeEndian.PutUint16(short[16:], eventHead+8)
	if _, _, err := Decode(short); err == nil || !strings.Contains(err.Error(), "expected 40") {
		t.Errorf("an exit event cut short: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(message(eventExit, 4243, 4242, 9, 123456789))
	f.Add(message(1, 1, 1, 0, 1))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, ok, err := Decode(b)
		if err != nil && ok {
			t.Fatalf("an error and an exit: %+v %v", x, err)
		}
	})
}

// TestReadsAKilledChildsSignal: with the privileges for it (root in the
// host's network namespace), a child killed by SIGKILL is read as such,
// within a second.
func TestReadsAKilledChildsSignal(t *testing.T) {
	r, err := Open()
	if err != nil {
		t.Skipf("no process events here: %v", err)
	}
	defer r.Close()
	got := make(chan rdma.ExitStatus, 1024)
	go func() { _ = r.Run(func(x rdma.ExitStatus) { got <- x }, func(error) {}) }()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	before := time.Now()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case x := <-got:
			if x.PID != pid {
				continue
			}
			if sig, ok := x.Signaled(); !ok || sig != int(syscall.SIGKILL) {
				t.Errorf("the child's exit: code %#x, want SIGKILL", x.Code)
			}
			if d := x.Time.Sub(before); d < -time.Second || d > 5*time.Second {
				t.Errorf("the exit's time is %v from the kill", d)
			}
			return
		case <-deadline:
			t.Fatalf("no exit event for pid %d in 5 s", pid)
		}
	}
}
