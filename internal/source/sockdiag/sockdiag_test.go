package sockdiag

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// inode is the socket inode of a listener or connection.
func inode(t *testing.T, c syscall.Conn) uint64 {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := rc.Control(func(fd uintptr) { err = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestDumpFindsOurSockets asks this machine's kernel: a TCP listener and a
// UDP socket of ours must be listed with their address, state and inode.
func TestDumpFindsOurSockets(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	udp, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer udp.Close()
	socks, err := Dump(-1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]Socket{
		inode(t, ln.(*net.TCPListener)): {Proto: "tcp", Src: netip.MustParseAddrPort(ln.Addr().String()), State: Listen},
		inode(t, udp.(*net.UDPConn)):    {Proto: "udp", Src: netip.MustParseAddrPort(udp.LocalAddr().String()), State: 7},
	}
	for _, s := range socks {
		w, ok := want[s.Inode]
		if !ok {
			continue
		}
		if s.Proto != w.Proto || s.Src != w.Src || s.State != w.State {
			t.Errorf("socket %d: %+v, want %+v", s.Inode, s, w)
		}
		delete(want, s.Inode)
	}
	for ino, w := range want {
		t.Errorf("no socket with inode %d (%+v) in %d sockets", ino, w, len(socks))
	}
}

func TestDecode(t *testing.T) {
	b := make([]byte, msgLen)
	b[0], b[1] = syscall.AF_INET, 1
	binary.BigEndian.PutUint16(b[4:], 7174)
	binary.BigEndian.PutUint16(b[6:], 40000)
	copy(b[8:], []byte{10, 99, 0, 1})
	copy(b[24:], []byte{10, 99, 0, 2})
	binary.NativeEndian.PutUint32(b[64:], 1000)
	binary.NativeEndian.PutUint32(b[68:], 4242)
	s, err := Decode(b, protoTCP)
	if err != nil {
		t.Fatal(err)
	}
	want := Socket{Proto: "tcp", Src: netip.MustParseAddrPort("10.99.0.1:7174"), Dst: netip.MustParseAddrPort("10.99.0.2:40000"),
		State: 1, UID: 1000, Inode: 4242}
	if s != want {
		t.Errorf("Decode = %+v, want %+v", s, want)
	}
	if s.State.String() != "ESTAB" || State(10).String() != "LISTEN" || State(99).String() != "state-99" {
		t.Errorf("state names: %s %s %s", s.State, State(10), State(99))
	}
	if _, err := Decode(b[:71], protoTCP); err == nil {
		t.Error("a short message decoded")
	}
	b[0] = 1
	if _, err := Decode(b, protoTCP); err == nil {
		t.Error("a message of family 1 decoded")
	}
}

func FuzzDecode(f *testing.F) {
	b := make([]byte, msgLen)
	b[0] = syscall.AF_INET6
	f.Add(b)
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b, protoUDP)
		if err == nil && (len(b) < msgLen || !s.Src.IsValid()) {
			t.Fatalf("Decode of %d bytes gave %+v", len(b), s)
		}
	})
}
