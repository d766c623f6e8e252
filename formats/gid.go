package formats

import (
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// GIDLong writes a GID as sysfs and show_gids do: eight groups of four
// hex digits.
func GIDLong(g rdma.GIDEntry) string {
	b := g.GID.As16()
	out := make([]byte, 0, 39)
	const hex = "0123456789abcdef"
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, hex[b[i]>>4], hex[b[i]&15], hex[b[i+1]>>4], hex[b[i+1]&15])
	}
	return string(out)
}

// gidVersion is show_gids' VER column: v1 or v2 on RoCE, IB on InfiniBand.
func gidVersion(g *rdma.GIDEntry) string {
	switch g.Type.Name(g.Eth) {
	case "RoCE v1":
		return "v1"
	case "RoCE v2":
		return "v2"
	}
	return g.Type.Name(g.Eth)
}

// GIDObject lays out a GID table entry: ifname and port as iproute2 names
// a link, the GID as sysfs writes it, its IPv4 address when it is one,
// its type as `ibv_devinfo -v` names it, and the netdev with its VLAN and
// namespace where it has them.
func GIDObject(g *rdma.GIDEntry) Object {
	o := Object{}.str(rdma.KeyIfname.Name, g.DevName).num(rdma.KeyPort.Name, uint64(g.Port)).
		num("index", uint64(g.Index)).str("gid", GIDLong(*g))
	if v4, ok := g.IPv4(); ok {
		o = o.str("ipv4", v4.String())
	}
	o = o.str("type", g.Type.Name(g.Eth))
	o = o.strIf(g.Netdev != "", "netdev", g.Netdev)
	o = o.numIf(g.HasVLAN, "vlan", uint64(g.VLAN))
	return o.numIf(g.NetNS != 0, "netns", g.NetNS)
}

// GIDTable lays out GID table entries in show_gids' columns, with the
// netdev's VLAN and namespace after them.
func GIDTable(gs []rdma.GIDEntry) *Table {
	t := NewTable("DEV", "PORT", "INDEX", "GID", "IPV4", "VER", "NETDEV", "VLAN", "NETNS")
	for i := range gs {
		g := &gs[i]
		v4, vlan, ns := "", "", ""
		if a, ok := g.IPv4(); ok {
			v4 = a.String()
		}
		if g.HasVLAN {
			vlan = strconv.Itoa(int(g.VLAN))
		}
		if g.NetNS != 0 {
			ns = strconv.FormatUint(g.NetNS, 10)
		}
		t.Append(g.DevName, strconv.FormatUint(uint64(g.Port), 10), strconv.FormatUint(uint64(g.Index), 10),
			GIDLong(*g), v4, gidVersion(g), g.Netdev, vlan, ns)
	}
	return t
}
