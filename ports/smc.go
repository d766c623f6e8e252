package ports

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/rdma"
	"github.com/rdmatrace/rdmatrace/smcnl"
	"github.com/rdmatrace/rdmatrace/sockdiag"
)

// SMCRow is one SMC socket with its process and, for SMC-R, the [smc]
// QPs on its link's device port.
type SMCRow struct {
	sockdiag.SMCSocket
	PID  uint32
	Comm string
	// QPs are the QPs the smc module holds on the link's device and port.
	// The kernel exports no QP number per link group, so this is every
	// [smc] QP there, which is the link's when one link group uses it.
	QPs []rdma.Resource
	// LinkGroup is the id of the socket's link group, when SMC's generic
	// netlink could be read.
	LinkGroup *uint32
}

// JoinSMC gives each SMC socket its process (by inode) and the [smc] QPs
// of its link's device port; qps are every QP (kernel-owned ones with
// kern-name smc are used).
func JoinSMC(socks []sockdiag.SMCSocket, qps []rdma.Resource, p Procs) []SMCRow {
	inodes := map[uint64]bool{}
	for _, s := range socks {
		if s.Inode != 0 {
			inodes[s.Inode] = true
		}
	}
	owners := p.SocketOwners(inodes)
	rows := make([]SMCRow, len(socks))
	for i, s := range socks {
		rows[i].SMCSocket = s
		if pid, ok := owners[s.Inode]; ok {
			rows[i].PID, rows[i].Comm = pid, p.Comm(pid)
		}
		if s.Link == nil {
			continue
		}
		rows[i].QPs = smcQPs(qps, s.Link.Dev, s.Link.Port)
	}
	return rows
}

// smcQPs are the smc module's QPs on a device port.
func smcQPs(qps []rdma.Resource, dev string, port uint8) []rdma.Resource {
	var out []rdma.Resource
	for _, q := range qps {
		if q.Owner.KernName == "smc" && q.DevName == dev && q.Port == uint32(port) {
			out = append(out, q)
		}
	}
	return out
}

// lgrID writes a link group id as smc-tools does.
func lgrID(id uint32) string { return fmt.Sprintf("%08x", id) }

// SMCObject is an SMC socket with smc-tools' smcss names where they exist.
func SMCObject(r *SMCRow) formats.Object {
	o := formats.Object{
		{Key: "src-addr", Kind: formats.Str, Str: formats.IPRouteAddr(r.Src.Addr().String(), r.Src.Port())},
		{Key: "dst-addr", Kind: formats.Str, Str: formats.IPRouteAddr(r.Dst.Addr().String(), r.Dst.Port())},
		{Key: "state", Kind: formats.Str, Str: r.State.String()},
		{Key: "mode", Kind: formats.Str, Str: r.Mode.String()},
	}
	if r.PID != 0 {
		o = append(o, formats.Field{Key: "pid", Kind: formats.Num, Num: uint64(r.PID)},
			formats.Field{Key: "comm", Kind: formats.Str, Str: r.Comm})
	}
	o = append(o, formats.Field{Key: "inode", Kind: formats.Num, Num: r.Inode})
	if r.HasFallback {
		o = append(o, formats.Field{Key: "fallback", Kind: formats.Num, Num: uint64(r.Fallback)})
		if r.Fallback != 0 {
			o = append(o, formats.Field{Key: "fallback-reason", Kind: formats.Str, Str: rdma.SMCReason(r.Fallback)})
		}
		if r.PeerDiagnosis != 0 {
			o = append(o, formats.Field{Key: "peer-diagnosis", Kind: formats.Str, Str: rdma.SMCReason(r.PeerDiagnosis)})
		}
	}
	if l := r.Link; l != nil {
		if r.LinkGroup != nil {
			o = append(o, formats.Field{Key: "lgr-id", Kind: formats.Str, Str: lgrID(*r.LinkGroup)})
		}
		o = append(o, formats.Field{Key: "ifname", Kind: formats.Str, Str: l.Dev},
			formats.Field{Key: "port", Kind: formats.Num, Num: uint64(l.Port)},
			formats.Field{Key: "link-id", Kind: formats.Num, Num: uint64(l.ID)},
			formats.Field{Key: "role", Kind: formats.Str, Str: l.Role},
			formats.Field{Key: "gid", Kind: formats.Str, Str: l.GID},
			formats.Field{Key: "peer-gid", Kind: formats.Str, Str: l.PeerGID})
		if r.Token != 0 {
			o = append(o, formats.Field{Key: "token", Kind: formats.Num, Num: uint64(r.Token)})
		}
		qpns := []string{}
		for _, q := range r.QPs {
			qpns = append(qpns, strconv.FormatUint(uint64(q.LQPN), 10))
		}
		o = append(o, formats.Field{Key: "smc-qps", Kind: formats.NumList, List: qpns})
	}
	return o
}

// SMCTable is one line per SMC socket.
func SMCTable(rows []SMCRow) *formats.Table {
	t := formats.NewTable("STATE", "MODE", "LOCAL", "PEER", "PROCESS", "FALLBACK", "LINK")
	for i := range rows {
		r := &rows[i]
		fb := ""
		if r.HasFallback && r.Fallback != 0 {
			fb = rdma.SMCReason(r.Fallback)
			if r.PeerDiagnosis != 0 {
				fb += ", peer: " + rdma.SMCReason(r.PeerDiagnosis)
			}
		}
		link := ""
		if l := r.Link; l != nil {
			link = fmt.Sprintf("%s/%d %s link %d", l.Dev, l.Port, l.Role, l.ID)
			if r.LinkGroup != nil {
				link = "lgr " + lgrID(*r.LinkGroup) + " " + link
			}
			for j, q := range r.QPs {
				if j == 0 {
					link += " [smc] qp"
				}
				link += fmt.Sprintf(" %d(%s)", q.LQPN, q.QPState)
			}
		}
		t.Append(r.State.String(), r.Mode.String(), r.Src.String(), r.Dst.String(), task(r.Comm, r.PID), fb, link)
	}
	return t
}

// LinkGroupRow is one link of an SMC-R link group (smcr linkgroup
// link-show), or a link group without links, with the SMC sockets on it
// and the [smc] QPs on its device port.
type LinkGroupRow struct {
	Group   smcnl.LinkGroup
	Link    *smcnl.Link
	Sockets []SMCRow
	QPs     []rdma.Resource
}

// JoinLinkGroups gives each link its sockets (smc_diag's LGRINFO names the
// link by id, device, port and GIDs) and the [smc] QPs of its device port.
func JoinLinkGroups(groups []smcnl.LinkGroup, socks []SMCRow, qps []rdma.Resource) []LinkGroupRow {
	var out []LinkGroupRow
	for _, g := range groups {
		if len(g.Links) == 0 {
			out = append(out, LinkGroupRow{Group: g})
			continue
		}
		for i := range g.Links {
			l := &g.Links[i]
			row := LinkGroupRow{Group: g, Link: l}
			for _, s := range socks {
				if onLink(s.Link, &g, l) {
					row.Sockets = append(row.Sockets, s)
				}
			}
			row.QPs = smcQPs(qps, l.Dev, l.Port)
			out = append(out, row)
		}
	}
	return out
}

// onLink says whether a socket's link (smc_diag's LGRINFO) is link l of
// link group g: the same id, device port and GIDs, and the same role.
func onLink(k *sockdiag.SMCLink, g *smcnl.LinkGroup, l *smcnl.Link) bool {
	return k != nil && k.ID == l.ID && k.Dev == l.Dev && k.Port == l.Port && k.Role == g.Role &&
		sameGID(k.GID, l.GID) && sameGID(k.PeerGID, l.PeerGID)
}

// AttachLinkGroups names the link group of each SMC-R socket.
func AttachLinkGroups(rows []SMCRow, groups []smcnl.LinkGroup) {
	for i := range rows {
		for j := range groups {
			for k := range groups[j].Links {
				if onLink(rows[i].Link, &groups[j], &groups[j].Links[k]) {
					id := groups[j].ID
					rows[i].LinkGroup = &id
				}
			}
		}
	}
}

// sameGID compares GIDs as smc_diag and SMC's netlink write them (both
// "%04x:..." today), parsed where they parse.
func sameGID(a, b string) bool {
	pa, ea := netip.ParseAddr(a)
	pb, eb := netip.ParseAddr(b)
	if ea == nil && eb == nil {
		return pa == pb
	}
	return strings.EqualFold(a, b)
}

// LinkGroupObject is one row of `smc linkgroup -j`: smc-tools' names where
// they exist (lgr-id as its hex, role, type, pnetid, conns, link-id, ...).
func LinkGroupObject(r *LinkGroupRow) formats.Object {
	g := &r.Group
	o := formats.Object{
		{Key: "lgr-id", Kind: formats.Str, Str: lgrID(g.ID)},
		{Key: "role", Kind: formats.Str, Str: g.Role},
		{Key: "type", Kind: formats.Str, Str: g.Type},
		{Key: "pnetid", Kind: formats.Str, Str: g.PNetID},
		{Key: "vlan", Kind: formats.Num, Num: uint64(g.VLAN)},
		{Key: "conns", Kind: formats.Num, Num: uint64(g.Conns)},
	}
	if g.NetCookie != 0 {
		o = append(o, formats.Field{Key: "net-cookie", Kind: formats.Num, Num: g.NetCookie})
	}
	if v := g.V2; v != nil {
		o = append(o, formats.Field{Key: "smc-version", Kind: formats.Num, Num: uint64(v.Version)},
			formats.Field{Key: "peer-release", Kind: formats.Num, Num: uint64(v.Release)},
			formats.Field{Key: "peer-os", Kind: formats.Num, Num: uint64(v.OS)},
			formats.Field{Key: "negotiated-eid", Kind: formats.Str, Str: v.NegotiatedEID},
			formats.Field{Key: "peer-host", Kind: formats.Str, Str: v.PeerHost})
	}
	l := r.Link
	if l == nil {
		return o
	}
	o = append(o, formats.Field{Key: "link-id", Kind: formats.Num, Num: uint64(l.ID)},
		formats.Field{Key: "ifname", Kind: formats.Str, Str: l.Dev},
		formats.Field{Key: "port", Kind: formats.Num, Num: uint64(l.Port)},
		formats.Field{Key: "link-state", Kind: formats.Str, Str: l.State},
		formats.Field{Key: "gid", Kind: formats.Str, Str: l.GID},
		formats.Field{Key: "peer-gid", Kind: formats.Str, Str: l.PeerGID},
		formats.Field{Key: "link-conns", Kind: formats.Num, Num: uint64(l.Conns)},
		formats.Field{Key: "net-dev", Kind: formats.Num, Num: uint64(l.NetDev)},
		formats.Field{Key: "link-uid", Kind: formats.Str, Str: l.UID},
		formats.Field{Key: "peer-link-uid", Kind: formats.Str, Str: l.PeerUID})
	socks := []string{}
	for i := range r.Sockets {
		s := &r.Sockets[i]
		socks = append(socks, s.Src.String()+" "+s.Dst.String()+" "+orNone(task(s.Comm, s.PID)))
	}
	qpns := []string{}
	for _, q := range r.QPs {
		qpns = append(qpns, strconv.FormatUint(uint64(q.LQPN), 10))
	}
	return append(o, formats.Field{Key: "sockets", Kind: formats.StrList, List: socks},
		formats.Field{Key: "smc-qps", Kind: formats.NumList, List: qpns})
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// LinkGroupTable is one line per link.
func LinkGroupTable(rows []LinkGroupRow) *formats.Table {
	t := formats.NewTable("LG-ID", "ROLE", "TYPE", "PNETID", "CONNS", "LINK", "DEV/PORT", "STATE", "PEER GID", "SOCKETS", "[SMC] QPS")
	for i := range rows {
		r := &rows[i]
		g := &r.Group
		row := []string{lgrID(g.ID), g.Role, g.Type, g.PNetID, strconv.FormatUint(uint64(g.Conns), 10)}
		if l := r.Link; l != nil {
			var socks, qps []string
			for j := range r.Sockets {
				s := &r.Sockets[j]
				socks = append(socks, s.Src.String()+" "+orNone(task(s.Comm, s.PID)))
			}
			for _, q := range r.QPs {
				qps = append(qps, fmt.Sprintf("%d(%s)", q.LQPN, q.QPState))
			}
			row = append(row, strconv.Itoa(int(l.ID)), fmt.Sprintf("%s/%d", l.Dev, l.Port), l.State, l.PeerGID,
				strings.Join(socks, ", "), strings.Join(qps, " "))
		} else {
			row = append(row, "", "", "", "", "", "")
		}
		t.Append(row...)
	}
	return t
}

// DeviceObject is one port of an SMC-R device (smcr device).
func DeviceObject(d *smcnl.Device, p *smcnl.DevicePort) formats.Object {
	o := formats.Object{
		{Key: "ifname", Kind: formats.Str, Str: d.Name},
		{Key: "port", Kind: formats.Num, Num: uint64(p.Port)},
		{Key: "pnetid", Kind: formats.Str, Str: p.PNetID},
		{Key: "pnetid-by-user", Kind: formats.Bool, Num: b2u(p.PNetByUser)},
		{Key: "net-dev", Kind: formats.Num, Num: uint64(p.NetDev)},
		{Key: "active", Kind: formats.Bool, Num: b2u(p.Active)},
		{Key: "links", Kind: formats.Num, Num: uint64(p.Links)},
		{Key: "dev-links", Kind: formats.Num, Num: uint64(d.Links)},
		{Key: "critical", Kind: formats.Bool, Num: b2u(d.Critical)},
	}
	if d.PCIID != "" {
		o = append(o, formats.Field{Key: "pci-id", Kind: formats.Str, Str: d.PCIID})
	}
	return o
}

// DeviceTable is one line per device port.
func DeviceTable(ds []smcnl.Device, netdev func(uint32) string) *formats.Table {
	t := formats.NewTable("DEV", "PORT", "PNETID", "NETDEV", "STATE", "LINKS", "CRITICAL")
	for i := range ds {
		d := &ds[i]
		for j := range d.Ports {
			p := &d.Ports[j]
			state, crit := "down", "no"
			if p.Active {
				state = "active"
			}
			if d.Critical {
				crit = "yes"
			}
			t.Append(d.Name, strconv.Itoa(int(p.Port)), p.PNetID, netdev(p.NetDev), state, strconv.FormatUint(uint64(p.Links), 10), crit)
		}
	}
	return t
}
