package rdma

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Address families of struct __kernel_sockaddr_storage.
const (
	afINET  = 2
	afINET6 = 10
	afIB    = 27
)

// DecodeSockaddr reads the kernel's sockaddr_storage. AF_IB addresses
// (struct sockaddr_ib) are shown as their GID with the low 16 bits of the
// service id, which is where rdma_cm keeps the port.
func DecodeSockaddr(b []byte) (netip.AddrPort, string, error) {
	if len(b) < 2 {
		return netip.AddrPort{}, "", fmt.Errorf("socket address of %d bytes, expected at least 2", len(b))
	}
	family := binary.NativeEndian.Uint16(b)
	short := func(need int) error {
		return fmt.Errorf("socket address of family %d is %d bytes, expected at least %d", family, len(b), need)
	}
	switch family {
	case afINET:
		if len(b) < 8 {
			return netip.AddrPort{}, "", short(8)
		}
		addr := netip.AddrFrom4([4]byte(b[4:8]))
		return netip.AddrPortFrom(addr, binary.BigEndian.Uint16(b[2:4])), "", nil
	case afINET6:
		if len(b) < 28 {
			return netip.AddrPort{}, "", short(28)
		}
		addr := netip.AddrFrom16([16]byte(b[8:24]))
		zone := ""
		if scope := binary.NativeEndian.Uint32(b[24:28]); scope != 0 {
			zone = fmt.Sprint(scope)
		}
		return netip.AddrPortFrom(addr, binary.BigEndian.Uint16(b[2:4])), zone, nil
	case afIB:
		// family u16, pkey be16, flowinfo be32, gid [16], sid be64, ...
		if len(b) < 32 {
			return netip.AddrPort{}, "", short(32)
		}
		addr := netip.AddrFrom16([16]byte(b[8:24]))
		sid := binary.BigEndian.Uint64(b[24:32])
		return netip.AddrPortFrom(addr, uint16(sid)), "", nil
	}
	return netip.AddrPort{}, "", fmt.Errorf("socket address of unknown family %d", family)
}
