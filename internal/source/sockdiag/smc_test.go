package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// smcMsg builds a smc_diag_msg and its attributes as smc_diag fills them.
// family afSMC|0x80 writes IPv6 addresses (SMCPROTO_SMC6) under AF_SMC.
func smcMsg(family, state, mode uint8, src, dst string, inode uint64, attrs ...[]byte) []byte {
	b := make([]byte, smcMsgLen)
	b[0], b[1], b[2] = family&0x7f, state, mode
	v4 := family == syscall.AF_INET || family == afSMC
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	binary.BigEndian.PutUint16(b[4:], s.Port())
	binary.BigEndian.PutUint16(b[6:], d.Port())
	if v4 {
		a4, d4 := s.Addr().As4(), d.Addr().As4()
		copy(b[8:], a4[:])
		copy(b[24:], d4[:])
	} else {
		a16, d16 := s.Addr().As16(), d.Addr().As16()
		copy(b[8:], a16[:])
		copy(b[24:], d16[:])
	}
	binary.NativeEndian.PutUint32(b[52:], 1000)
	binary.NativeEndian.PutUint64(b[56:], inode)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func nla(typ uint16, v []byte) []byte {
	b := make([]byte, 4, 4+len(v)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func fallbackAttr(reason, peer uint32) []byte {
	v := make([]byte, 8)
	binary.NativeEndian.PutUint32(v, reason)
	binary.NativeEndian.PutUint32(v[4:], peer)
	return nla(smcFallback, v)
}

func lgrAttr(dev string, role byte) []byte {
	v := make([]byte, smcLinkLen+1)
	v[0] = 1
	copy(v[1:65], dev)
	v[65] = 1
	copy(v[66:106], "0000:0000:0000:0000:0000:ffff:0a63:0001")
	copy(v[106:146], "0000:0000:0000:0000:0000:ffff:0a63:0001")
	v[146] = role
	return nla(smcLgrInfo, v)
}

// The three sockets of the notes' runs: a client that fell back for lack
// of a device, a server whose peer declined, and an SMC-R client with its
// link (IPv6-mapped CLC addresses are unmapped).
func TestDecodeSMC(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"fallback", smcMsg(afSMC, 1, 1, "10.99.0.1:51000", "10.99.0.1:7500", 77, fallbackAttr(0x03030000, 0)),
			"10.99.0.1:51000>10.99.0.1:7500 ACTIVE TCP 77 0x03030000 (no SMC device found (R or D)) 0x00000000 <nil>"},
		{"peer declined", smcMsg(afSMC, 1, 1, "10.99.0.1:7500", "10.99.0.1:51000", 78, fallbackAttr(0x05000000, 0x03030000)),
			"10.99.0.1:7500>10.99.0.1:51000 ACTIVE TCP 78 0x05000000 (peer declined during handshake) 0x03030000 (no SMC device found (R or D)) <nil>"},
		{"smc-r", smcMsg(afSMC|0x80, 2, 0, "[::ffff:10.99.0.1]:51001", "[::ffff:10.99.0.1]:7500", 79, fallbackAttr(0, 0), lgrAttr("rxe0", 0)),
			"10.99.0.1:51001>10.99.0.1:7500 INIT SMCR 79 0x00000000 0x00000000 &{1 rxe0 1 0000:0000:0000:0000:0000:ffff:0a63:0001 0000:0000:0000:0000:0000:ffff:0a63:0001 client}"},
	} {
		s, err := DecodeSMC(tc.msg)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := s.Src.String() + ">" + s.Dst.String() + " " + s.State.String() + " " + s.Mode.String() + " " +
			strconv.FormatUint(s.Inode, 10) + " " + rdma.SMCReason(s.Fallback) + " " + rdma.SMCReason(s.PeerDiagnosis) + " " + linkString(s.Link)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func linkString(l *SMCLink) string {
	if l == nil {
		return "<nil>"
	}
	return fmt.Sprintf("&{%d %s %d %s %s %s}", l.ID, l.Dev, l.Port, l.GID, l.PeerGID, l.Role)
}

// A short message, a short attribute and an attribute running past the
// end are errors that say what was wrong; the fixed part is kept.
func TestDecodeSMCBadInput(t *testing.T) {
	if _, err := DecodeSMC(append([]byte{7}, make([]byte, 63)...)); err == nil || !strings.Contains(err.Error(), "address family 7") {
		t.Errorf("family 7: %v", err)
	}
	if _, err := DecodeSMC(make([]byte, 10)); err == nil || !strings.Contains(err.Error(), "smc_diag_msg of 10 bytes, want 64") {
		t.Errorf("short message: %v", err)
	}
	m := smcMsg(afSMC, 1, 1, "10.0.0.1:1", "10.0.0.2:2", 5, nla(smcFallback, []byte{1, 2}))
	s, err := DecodeSMC(m)
	if err == nil || !strings.Contains(err.Error(), "SMC_DIAG_FALLBACK of 2 bytes, want 8") || s.Inode != 5 {
		t.Errorf("short fallback: %v (inode %d)", err, s.Inode)
	}
	m = smcMsg(afSMC, 1, 1, "10.0.0.1:1", "10.0.0.2:2", 5, []byte{200, 0, 5, 0})
	if _, err := DecodeSMC(m); err == nil || !strings.Contains(err.Error(), "attribute of length 200") {
		t.Errorf("overlong attribute: %v", err)
	}
}

// DumpSMC on this host: no smc_diag (no modules here) is ErrNoSMC, which
// the command turns into its message; with it, a list.
func TestDumpSMC(t *testing.T) {
	_, err := DumpSMC()
	if err != nil && !errors.Is(err, ErrNoSMC) {
		t.Errorf("DumpSMC: %v, want a list or ErrNoSMC", err)
	}
}

func FuzzDecodeSMC(f *testing.F) {
	f.Add(smcMsg(afSMC, 1, 1, "10.99.0.1:51000", "10.99.0.1:7500", 77, fallbackAttr(0x03030000, 0)))
	f.Add(smcMsg(afSMC|0x80, 2, 0, "[2001:db8::1]:1", "[::1]:2", 79, fallbackAttr(0, 0), lgrAttr("rxe0\x1b[2J", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSMC(b)
		// A bad attribute keeps the socket's fixed part; a bad family or
		// a short message is the whole message's error.
		known := len(b) >= smcMsgLen && (b[0] == afSMC || b[0] == syscall.AF_INET || b[0] == syscall.AF_INET6)
		if err != nil && known && s.Inode != binary.NativeEndian.Uint64(b[56:]) {
			t.Errorf("the fixed part was lost with %v", err)
		}
		if err == nil && !known {
			t.Errorf("a message of %d bytes, family %d, decoded", len(b), b[0])
		}
	})
}
