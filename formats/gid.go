package formats

import (
	"bufio"
	"io"
	"strconv"
	"time"

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

// GIDChangeObject is a change `gid -w` found between two polls: the time
// of the poll, what happened (added, removed, changed), polled true (a
// difference of two reads, not an event the kernel reported), and the
// entry's keys as GIDObject has them.
func GIDChangeObject(at time.Time, what string, g *rdma.GIDEntry) Object {
	o := Object{timeField("time", at)}.str("change", what).boolean("polled", true)
	return append(o, GIDObject(g)...)
}

// GIDChangeLine is the human view of a polled change:
//
//	14:03:07.123456 added   rxe0/1 index 3 0000:...:0701 10.99.7.1 v2 veth0 (polled)
func GIDChangeLine(at time.Time, what string, g *rdma.GIDEntry) string {
	b := at.Local().AppendFormat(nil, "15:04:05.000000")
	b = append(append(b, ' '), what...)
	for i := len(what); i < 8; i++ {
		b = append(b, ' ')
	}
	b = append(append(b, Sanitize(g.DevName)...), '/')
	b = strconv.AppendUint(b, uint64(g.Port), 10)
	b = strconv.AppendUint(append(b, " index "...), uint64(g.Index), 10)
	b = append(append(b, ' '), GIDLong(*g)...)
	if v4, ok := g.IPv4(); ok {
		b = append(append(b, ' '), v4.String()...)
	}
	b = append(append(b, ' '), gidVersion(g)...)
	if g.Netdev != "" {
		b = append(append(b, ' '), Sanitize(g.Netdev)...)
	}
	if g.HasVLAN {
		b = strconv.AppendUint(append(b, " vlan "...), uint64(g.VLAN), 10)
	}
	return string(append(b, " (polled)"...))
}

// GIDView is gid's output: the table (GIDList), then with -w each change
// (GIDChange), held until Flush.
type GIDView struct {
	out    io.Writer
	buf    *bufio.Writer
	format Format
}

// NewGIDView writes gid's output to w in f.
func NewGIDView(w io.Writer, f Format) *GIDView {
	return &GIDView{out: w, buf: bufio.NewWriter(w), format: f}
}

func (v *GIDView) Table(gs []rdma.GIDEntry) error {
	if err := v.buf.Flush(); err != nil {
		return err
	}
	return GIDList.Of(gs).Write(v.out, v.format, false)
}

func (v *GIDView) Change(at time.Time, what string, g *rdma.GIDEntry) error {
	return GIDChange(v.buf, v.format, at, what, g)
}

func (v *GIDView) Flush() error { return v.buf.Flush() }
