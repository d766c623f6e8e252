package proc

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// statLine is /proc/PID/stat as do_task_stat writes it, for a comm of up to
// 15 bytes (TASK_COMM_LEN), which may hold anything but a NUL.
func statLine(comm []byte, ppid uint32) []byte {
	comm = bytes.ReplaceAll(comm, []byte{0}, nil)
	if len(comm) > 15 {
		comm = comm[:15]
	}
	return []byte("205 (" + string(comm) + ") S " + strconv.FormatUint(uint64(ppid), 10) +
		" 205 205 34816 205 4194304 112 0 0 0 0 0 0 0 20 0 1 0 1815 5550080 384 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n")
}

// FuzzStatPPID: whatever a process calls itself (it sets its comm with
// prctl), the parent read from its stat line is the one the kernel wrote;
// and from any bytes, a pid found is the second field after the last ')'.
func FuzzStatPPID(f *testing.F) {
	f.Add([]byte("rping"), uint32(1), []byte("205 (a) (b) c) S 201 205 1 0 -1\n"))
	f.Add([]byte(") S 7 ("), uint32(4242), statLine([]byte("x) R 9"), 3))
	f.Add([]byte("a\nb\tc d"), uint32(1<<31), []byte("1 (init) S 0"))
	f.Fuzz(func(t *testing.T, comm []byte, ppid uint32, stat []byte) {
		line := statLine(comm, ppid)
		if got := statPPID(line); got != ppid {
			t.Fatalf("statPPID(%q) = %d, want %d", line, got, ppid)
		}
		got := statPPID(stat)
		if got == 0 {
			return
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != strconv.FormatUint(uint64(got), 10) && strings.TrimLeft(f[1], "0") != strconv.FormatUint(uint64(got), 10) {
			t.Fatalf("statPPID(%q) = %d, not the field after the state", stat, got)
		}
	})
}

// statusText is /proc/PID/status as proc_pid_status writes it: the name is
// escaped (a newline as \n), so no line but Tgid's says Tgid.
func statusText(name []byte, tgid uint32) []byte {
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(string(bytes.ReplaceAll(name, []byte{0}, nil)))
	return []byte("Name:\t" + esc + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" + strconv.FormatUint(uint64(tgid), 10) +
		"\nNgid:\t0\nPid:\t205\nPPid:\t1\nTracerPid:\t0\n")
}

// FuzzStatusTGID: the thread group read from a status file is the one
// the kernel wrote, whatever the name; from any bytes, a tgid found is
// the first Tgid line's.
func FuzzStatusTGID(f *testing.F) {
	f.Add([]byte("rping"), uint32(201), []byte("Name:\trping\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t201\nNgid:\t0\nPid:\t205\nPPid:\t1\n"))
	f.Add([]byte("x\nTgid:\t7"), uint32(9), []byte("Tgid: 4294967296\n"))
	f.Fuzz(func(t *testing.T, name []byte, tgid uint32, status []byte) {
		text := statusText(name, tgid)
		if got := statusTGID(text); got != tgid {
			t.Fatalf("statusTGID(%q) = %d, want %d", text, got, tgid)
		}
		got := statusTGID(status)
		if got == 0 {
			return
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err != nil || uint32(n) != got {
					t.Fatalf("statusTGID(%q) = %d, not its first Tgid line %q", status, got, line)
				}
				return
			}
		}
		t.Fatalf("statusTGID(%q) = %d without a Tgid line", status, got)
	})
}

// FuzzSocketInode: an fd link names a socket exactly as sock_d_dname
// writes it, "socket:[INODE]"; any other target is not a socket.
func FuzzSocketInode(f *testing.F) {
	f.Add("socket:[12345]", uint64(12345))
	f.Add("socket:[", uint64(0))
	f.Add("socket:[123", uint64(1<<63))
	f.Add("/dev/infiniband/uverbs0", uint64(7))
	f.Add("anon_inode:[eventpoll]", uint64(1))
	f.Fuzz(func(t *testing.T, target string, ino uint64) {
		link := "socket:[" + strconv.FormatUint(ino, 10) + "]"
		if got, ok := socketInode(link); !ok || got != ino {
			t.Fatalf("socketInode(%q) = %d, %v", link, got, ok)
		}
		got, ok := socketInode(target)
		if !ok {
			return
		}
		digits, framed := strings.CutPrefix(target, "socket:[")
		digits, closed := strings.CutSuffix(digits, "]")
		if !framed || !closed || strings.Trim(digits, "0123456789") != "" || strings.TrimLeft(digits, "0") != strings.TrimLeft(strconv.FormatUint(got, 10), "0") {
			t.Fatalf("socketInode(%q) = %d: not a socket:[INODE] link", target, got)
		}
	})
}
