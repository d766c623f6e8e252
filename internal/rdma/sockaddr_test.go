package rdma

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// sockaddr lays out a sockaddr_storage of family with port and the address
// at offset at (4 for AF_INET, 8 for AF_INET6 and AF_IB).
func sockaddr(family uint16, port uint16, addr string, at int) []byte {
	b := make([]byte, 128)
	binary.NativeEndian.PutUint16(b, family)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[at:], netip.MustParseAddr(addr).AsSlice())
	return b
}

func TestDecodeSockaddrReadsEachFamily(t *testing.T) {
	ib := sockaddr(afIB, 0, "fe80::5054:ff:fe12:3456", 8)
	binary.BigEndian.PutUint64(ib[24:], 0x0000000001060000|7174)
	v6 := sockaddr(afINET6, 443, "fe80::1", 8)
	binary.NativeEndian.PutUint32(v6[24:], 2)
	for _, tc := range []struct {
		name, want, zone, err string
		in                    []byte
	}{
		{name: "ipv4", in: sockaddr(afINET, 80, "192.0.2.1", 4), want: "192.0.2.1:80"},
		{name: "ipv6", in: sockaddr(afINET6, 443, "2001:db8::1", 8), want: "[2001:db8::1]:443"},
		{name: "ipv6 with a scope", in: v6, want: "[fe80::1]:443", zone: "2"},
		{name: "af_ib", in: ib, want: "[fe80::5054:ff:fe12:3456]:7174"},
		{name: "unknown family", in: []byte{99, 0, 0, 0}, err: "unknown family 99"},
		{name: "short ipv4", in: sockaddr(afINET, 80, "192.0.2.1", 4)[:6], err: "expected at least 8"},
		{name: "empty", err: "expected at least 2"},
	} {
		got, zone, err := DecodeSockaddr(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want || zone != tc.zone {
			t.Errorf("%s: got %v zone %q, %v; want %s zone %q", tc.name, got, zone, err, tc.want, tc.zone)
		}
	}
}
