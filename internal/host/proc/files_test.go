package proc

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestTGIDAndParent(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "205")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	status := "Name:\trping\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t201\nNgid:\t0\nPid:\t205\nPPid:\t1\n"
	stat := "205 (a) (b) c) S 201 205 1 0 -1\n" // a comm with ") " in it
	if err := os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &CommCache{Root: root}
	if got := c.TGID(205); got != 201 {
		t.Errorf("TGID(205) = %d, want 201", got)
	}
	if got := c.ParentPID(205); got != 201 {
		t.Errorf("ParentPID(205) = %d, want 201", got)
	}
	if c.TGID(999) != 0 || c.ParentPID(999) != 0 {
		t.Error("a process that is gone must give 0")
	}
}

func TestRDMAFilesOfAProcessOnItsOwnSystem(t *testing.T) {
	// The test process holds no RDMA files: an empty list, not an error.
	c := &CommCache{}
	if got := c.RDMAFiles(uint32(os.Getpid()), ""); len(got) != 0 {
		t.Errorf("RDMAFiles of the test = %v", got)
	}
}

func TestSocketOwnersFindsOurListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := rc.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	var c CommCache
	got := c.SocketOwners(map[uint64]bool{st.Ino: true, 1: true})
	if got[st.Ino] != uint32(os.Getpid()) || len(got) != 1 {
		t.Errorf("SocketOwners = %v, want inode %d -> our pid %d only", got, st.Ino, os.Getpid())
	}
}
