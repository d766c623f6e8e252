package proc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fakeProc is a /proc of processes whose fd links name what each holds.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc { return &fakeProc{t: t, root: t.TempDir()} }

// hold gives pid an open file fd whose link is target.
func (p *fakeProc) hold(pid, fd int, target string) {
	p.t.Helper()
	dir := filepath.Join(p.root, fmt.Sprint(pid), "fd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, fmt.Sprint(fd))); err != nil {
		p.t.Fatal(err)
	}
}

// exit removes pid.
func (p *fakeProc) exit(pid int) {
	p.t.Helper()
	if err := os.RemoveAll(filepath.Join(p.root, fmt.Sprint(pid))); err != nil {
		p.t.Fatal(err)
	}
}

// TestSocketIndexScansOncePerNewSocket: sockets a scan saw are answered
// from the index, however often they are asked for; a socket it has not
// seen makes it scan again, at most once per MinRescan; a socket no
// process holds is not looked for again until Forget has passed.
func TestSocketIndexScansOncePerNewSocket(t *testing.T) {
	p := newFakeProc(t)
	p.hold(300, 3, "socket:[1001]")
	p.hold(300, 4, "/dev/null")
	p.hold(301, 3, "socket:[1001]") // shared with a child: the lowest pid
	p.hold(302, 7, "socket:[1002]")
	now := time.Unix(1000, 0)
	x := &SocketIndex{Root: p.root, MinRescan: time.Second, Forget: 10 * time.Second, now: func() time.Time { return now }}
	ask := func(inodes ...uint64) map[uint64]uint32 {
		m := map[uint64]bool{}
		for _, i := range inodes {
			m[i] = true
		}
		return x.SocketOwners(m)
	}
	for i := 0; i < 100; i++ {
		if got := ask(1001, 1002); got[1001] != 300 || got[1002] != 302 || len(got) != 2 {
			t.Fatalf("lookup %d: %v, want 1001 -> 300, 1002 -> 302", i, got)
		}
	}
	if n := x.Scans(); n != 1 {
		t.Errorf("%d scans for 100 lookups of known sockets, want 1", n)
	}

	// A new socket within MinRescan of the last scan: not found yet, no scan.
	p.hold(303, 5, "socket:[1003]")
	now = now.Add(500 * time.Millisecond)
	if got := ask(1003); len(got) != 0 || x.Scans() != 1 {
		t.Errorf("a new socket half a second after a scan: %v after %d scans, want nothing and no new scan", got, x.Scans())
	}
	now = now.Add(600 * time.Millisecond)
	if got := ask(1003, 1001); got[1003] != 303 || got[1001] != 300 || x.Scans() != 2 {
		t.Errorf("a new socket past MinRescan: %v after %d scans, want 1003 -> 303 from a second scan", got, x.Scans())
	}

	// A socket no process holds (a kernel socket): one scan, then it is
	// not looked for again until Forget has passed.
	now = now.Add(2 * time.Second)
	if got := ask(4242); len(got) != 0 || x.Scans() != 3 {
		t.Errorf("a kernel socket: %v after %d scans, want nothing from a third scan", got, x.Scans())
	}
	for i := 0; i < 5; i++ {
		now = now.Add(time.Second)
		ask(4242)
	}
	if x.Scans() != 3 {
		t.Errorf("a socket no one holds, asked for again within Forget: %d scans, want still 3", x.Scans())
	}
	now = now.Add(10 * time.Second)
	ask(4242)
	if x.Scans() != 4 {
		t.Errorf("past Forget: %d scans, want a fourth", x.Scans())
	}

	// A scan forgets what exited.
	p.exit(302)
	p.hold(304, 9, "socket:[1004]")
	now = now.Add(2 * time.Second)
	if got := ask(1004, 1002); got[1004] != 304 || len(got) != 1 {
		t.Errorf("after 302 exited: %v, want 1004 -> 304 only", got)
	}
}

// TestSocketIndexKeepsAtMostMax: past Max sockets a scan keeps only those
// asked for.
func TestSocketIndexKeepsAtMostMax(t *testing.T) {
	p := newFakeProc(t)
	for fd := 0; fd < 50; fd++ {
		p.hold(400, fd, fmt.Sprintf("socket:[%d]", 5000+fd))
	}
	x := &SocketIndex{Root: p.root, Max: 10}
	if got := x.SocketOwners(map[uint64]bool{5049: true}); got[5049] != 400 {
		t.Errorf("the socket asked for, past Max: %v, want 5049 -> 400", got)
	}
	if n := len(x.owners); n > 11 {
		t.Errorf("the index keeps %d sockets, want at most Max (10) and the one asked for", n)
	}
}

// BenchmarkSocketLookup: naming the holder of one socket with 5 000 more
// files open in this process, by a scan of every process's files at each
// lookup (CommCache.SocketOwners, what each port-busy event paid) and from
// a SocketIndex that has seen the socket.
func BenchmarkSocketLookup(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var st syscall.Stat_t
	if err := rc.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) }); err != nil {
		b.Fatal(err)
	}
	for range 5000 {
		f, err := os.Open("/dev/null")
		if err != nil {
			b.Skip("cannot open 5000 files:", err)
		}
		defer f.Close()
	}
	want := map[uint64]bool{st.Ino: true}
	b.Run("scan", func(b *testing.B) {
		var c CommCache
		for b.Loop() {
			if len(c.SocketOwners(want)) != 1 {
				b.Fatal("not found")
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		x := &SocketIndex{}
		for b.Loop() {
			if len(x.SocketOwners(want)) != 1 {
				b.Fatal("not found")
			}
		}
	})
}
