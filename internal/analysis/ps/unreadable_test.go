package ps

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// Processes whose fd directory is closed to us are named; those that have
// files, that are gone, or that are kernel modules are not.
func TestUnreadableNamesProcessesWhoseFilesAreClosedToUs(t *testing.T) {
	rows := []Row{
		{PID: 10},                       // another user's: EACCES
		{PID: 11, Files: []string{"x"}}, // read
		{PID: 12},                       // gone: ENOENT
		{Module: "ib_srpt"},             // a module has no files
		{PID: 13},                       // another user's
		{PID: 14},                       // ours, no RDMA file open
	}
	errs := map[uint32]error{10: fs.ErrPermission, 12: fs.ErrNotExist, 13: &fs.PathError{Op: "open", Path: "/proc/13/fd", Err: fs.ErrPermission}}
	got := unreadable(rows, func(pid uint32) error {
		if pid == 0 || pid == 11 {
			t.Errorf("read the fds of %d", pid)
		}
		return errs[pid]
	})
	if want := []uint32{10, 13}; !reflect.DeepEqual(got, want) {
		t.Errorf("unreadable = %v, want %v", got, want)
	}
}

func TestUnreadableNoteIsOneLineThatSaysWhatToDo(t *testing.T) {
	if got := UnreadableNote(nil); got != "" {
		t.Errorf("no pids: %q", got)
	}
	one := UnreadableNote([]uint32{812})
	if !strings.Contains(one, "process 812 ") || !strings.Contains(one, "CAP_SYS_PTRACE") || strings.Contains(one, "\n") {
		t.Errorf("one pid: %q", one)
	}
	many := UnreadableNote([]uint32{1, 2, 3, 4, 5, 6})
	if !strings.Contains(many, "6 processes (1, 2, 3, 4, ...)") {
		t.Errorf("six pids: %q", many)
	}
}
