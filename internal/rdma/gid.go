package rdma

import "net/netip"

// GIDEntry is one entry of a port's GID table, as the kernel's sysfs gives
// it and show_gids prints it.
type GIDEntry struct {
	DevName string
	Port    uint32
	Index   uint32
	GID     netip.Addr // 16 bytes; an IPv4-mapped GID is a RoCE GID of an IPv4 address
	// Type is the entry's GID type; on an Ethernet port (Eth) type 0 is
	// RoCE v1, which sysfs names "IB/RoCE v1".
	Type GIDType
	Eth  bool
	// Netdev is the netdev the GID belongs to (RoCE); "" on IB.
	Netdev  string
	HasVLAN bool
	VLAN    uint16
	// NetNS is the network namespace the netdev is in (its inode
	// number), 0 when it is not in ours and unknown.
	NetNS uint64
}

// IPv4 is the GID's IPv4 address when it is one mapped (::ffff:a.b.c.d).
func (g *GIDEntry) IPv4() (netip.Addr, bool) {
	if g.GID.Is4In6() {
		return g.GID.Unmap(), true
	}
	return netip.Addr{}, false
}
