package formats

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The views of rdmatrace ports and rdmatrace smc: sockets with their
// rdma_cm IDs and conflicts (ss's layout), SMC sockets, link groups and
// devices (smc-tools' names).

// HolderObject is a row of rdmatrace ports (a socket or rdma_cm ID holding a port) with `rdma res cm_id`'s key names where they exist
// (src-addr, dst-addr, state, pid, comm, ifname for the RDMA device, port
// for its port, cm-idn, ps).
func HolderObject(r *ports.Row) Object {
	o := Object{
		{Key: "proto", Kind: Str, Str: r.Proto},
		{Key: "stack", Kind: Str, Str: r.Stack},
		{Key: "src-addr", Kind: Str, Str: IPRouteAddr(r.Src.Addr().String(), r.Src.Port())},
		{Key: "dst-addr", Kind: Str, Str: IPRouteAddr(r.Dst.Addr().String(), r.Dst.Port())},
		{Key: "state", Kind: Str, Str: r.State},
	}
	switch {
	case r.Module != "":
		o = append(o, Field{Key: "kern-name", Kind: Str, Str: r.Module})
	case r.PID != 0:
		o = append(o, Field{Key: "pid", Kind: Num, Num: uint64(r.PID)})
		if r.Comm != "" {
			o = append(o, Field{Key: "comm", Kind: Str, Str: r.Comm})
		}
	}
	if r.Inode != 0 {
		o = append(o, Field{Key: "inode", Kind: Num, Num: r.Inode})
	}
	o = append(o, Field{Key: "host-port", Kind: Bool, Num: b2u(r.HostPort)})
	if r.CM {
		if r.Dev != "" {
			o = append(o, Field{Key: "ifname", Kind: Str, Str: r.Dev},
				Field{Key: "port", Kind: Num, Num: uint64(r.DevPort)})
		}
		o = append(o, Field{Key: "cm-idn", Kind: Num, Num: uint64(r.CMIDN)},
			Field{Key: "ps", Kind: Str, Str: r.PS.String()})
	}
	return o
}

// ConflictObject is a conflict as one flat record: the port, whether the
// kernel refuses one side, and both claimants' keys prefixed "rdma-" and
// "host-".
func ConflictObject(c *ports.Conflict) Object {
	o := Object{
		{Key: "port", Kind: Num, Num: uint64(c.RDMA.Src.Port())},
		{Key: "conflict", Kind: Bool, Num: b2u(c.Real)},
		{Key: "why", Kind: Str, Str: c.Why()},
	}
	for _, side := range []struct {
		prefix string
		row    *ports.Row
	}{{"rdma-", &c.RDMA}, {"host-", &c.Host}} {
		for _, f := range HolderObject(side.row) {
			if f.Key != "proto" && f.Key != "host-port" {
				f.Key = side.prefix + f.Key
				o = append(o, f)
			}
		}
	}
	return o
}

// where is the RDMA side of a row: "siw0/1 cm-idn 2", and for an ID that
// takes no host port, that it does not.
func where(r *ports.Row) string {
	if !r.CM {
		return ""
	}
	s := "cm-idn " + strconv.FormatUint(uint64(r.CMIDN), 10)
	if r.Dev != "" {
		s = r.Dev + "/" + strconv.FormatUint(uint64(r.DevPort), 10) + " " + s
	}
	if !r.HostPort {
		s += " (not a host port)"
	}
	return s
}

// HolderTable lays rdmatrace ports rows out as ss does, with the stack and the RDMA side.
func HolderTable(rows []ports.Row) *Table {
	t := NewTable("PROTO", "STATE", "LOCAL", "PEER", "STACK", "PROCESS", "RDMA")
	for i := range rows {
		r := &rows[i]
		t.Append(r.Proto, r.State, r.Src.String(), r.Dst.String(), r.Stack, ports.Owner(r), where(r))
	}
	return t
}

// ConflictTable is one line per conflict.
func ConflictTable(cs []ports.Conflict) *Table {
	t := NewTable("PORT", "CONFLICT", "RDMA_CM", "HOLDER", "HOST SOCKET", "HOLDER", "WHY")
	for i := range cs {
		c := &cs[i]
		verdict := "no"
		if c.Real {
			verdict = "yes"
		}
		t.Append(strconv.Itoa(int(c.RDMA.Src.Port())), verdict,
			c.RDMA.State+" "+c.RDMA.Src.String()+" "+where(&c.RDMA), ports.Owner(&c.RDMA),
			c.Host.State+" "+c.Host.Src.String(), ports.Owner(&c.Host), c.Why())
	}
	return t
}

// SMCObject is an SMC socket with smc-tools' smcss names where they exist.
func SMCObject(r *ports.SMCRow) Object {
	o := Object{
		{Key: "src-addr", Kind: Str, Str: IPRouteAddr(r.Src.Addr().String(), r.Src.Port())},
		{Key: "dst-addr", Kind: Str, Str: IPRouteAddr(r.Dst.Addr().String(), r.Dst.Port())},
		{Key: "state", Kind: Str, Str: r.State.String()},
		{Key: "mode", Kind: Str, Str: r.Mode.String()},
	}
	if r.PID != 0 {
		o = append(o, Field{Key: "pid", Kind: Num, Num: uint64(r.PID)},
			Field{Key: "comm", Kind: Str, Str: r.Comm})
	}
	o = append(o, Field{Key: "inode", Kind: Num, Num: r.Inode})
	if r.HasFallback {
		o = append(o, Field{Key: "fallback", Kind: Num, Num: uint64(r.Fallback)})
		if r.Fallback != 0 {
			o = append(o, Field{Key: "fallback-reason", Kind: Str, Str: rdma.SMCReason(r.Fallback)})
		}
		if r.PeerDiagnosis != 0 {
			o = append(o, Field{Key: "peer-diagnosis", Kind: Str, Str: rdma.SMCReason(r.PeerDiagnosis)})
		}
	}
	if l := r.Link; l != nil {
		if r.LinkGroup != nil {
			o = append(o, Field{Key: "lgr-id", Kind: Str, Str: ports.LinkGroupID(*r.LinkGroup)})
		}
		o = append(o, Field{Key: "ifname", Kind: Str, Str: l.Dev},
			Field{Key: "port", Kind: Num, Num: uint64(l.Port)},
			Field{Key: "link-id", Kind: Num, Num: uint64(l.ID)},
			Field{Key: "role", Kind: Str, Str: l.Role},
			Field{Key: "gid", Kind: Str, Str: l.GID},
			Field{Key: "peer-gid", Kind: Str, Str: l.PeerGID})
		if r.Token != 0 {
			o = append(o, Field{Key: "token", Kind: Num, Num: uint64(r.Token)})
		}
		qpns := []string{}
		for _, q := range r.QPs {
			qpns = append(qpns, strconv.FormatUint(uint64(q.LQPN), 10))
		}
		o = append(o, Field{Key: "smc-qps", Kind: NumList, List: qpns})
	}
	return o
}

// SMCTable is one line per SMC socket.
func SMCTable(rows []ports.SMCRow) *Table {
	t := NewTable("STATE", "MODE", "LOCAL", "PEER", "PROCESS", "FALLBACK", "LINK")
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
				link = "lgr " + ports.LinkGroupID(*r.LinkGroup) + " " + link
			}
			for j, q := range r.QPs {
				if j == 0 {
					link += " [smc] qp"
				}
				link += fmt.Sprintf(" %d(%s)", q.LQPN, q.QPState)
			}
		}
		t.Append(r.State.String(), r.Mode.String(), r.Src.String(), r.Dst.String(), ports.Task(r.Comm, r.PID), fb, link)
	}
	return t
}

// LinkGroupObject is one row of `smc linkgroup -j`: smc-tools' names where
// they exist (lgr-id as its hex, role, type, pnetid, conns, link-id, ...).
func LinkGroupObject(r *ports.LinkGroupRow) Object {
	g := &r.Group
	o := Object{
		{Key: "lgr-id", Kind: Str, Str: ports.LinkGroupID(g.ID)},
		{Key: "role", Kind: Str, Str: g.Role},
		{Key: "type", Kind: Str, Str: g.Type},
		{Key: "pnetid", Kind: Str, Str: g.PNetID},
		{Key: "vlan", Kind: Num, Num: uint64(g.VLAN)},
		{Key: "conns", Kind: Num, Num: uint64(g.Conns)},
	}
	if g.NetCookie != 0 {
		o = append(o, Field{Key: "net-cookie", Kind: Num, Num: g.NetCookie})
	}
	if v := g.V2; v != nil {
		o = append(o, Field{Key: "smc-version", Kind: Num, Num: uint64(v.Version)},
			Field{Key: "peer-release", Kind: Num, Num: uint64(v.Release)},
			Field{Key: "peer-os", Kind: Num, Num: uint64(v.OS)},
			Field{Key: "negotiated-eid", Kind: Str, Str: v.NegotiatedEID},
			Field{Key: "peer-host", Kind: Str, Str: v.PeerHost})
	}
	l := r.Link
	if l == nil {
		return o
	}
	o = append(o, Field{Key: "link-id", Kind: Num, Num: uint64(l.ID)},
		Field{Key: "ifname", Kind: Str, Str: l.Dev},
		Field{Key: "port", Kind: Num, Num: uint64(l.Port)},
		Field{Key: "link-state", Kind: Str, Str: l.State},
		Field{Key: "gid", Kind: Str, Str: l.GID},
		Field{Key: "peer-gid", Kind: Str, Str: l.PeerGID},
		Field{Key: "link-conns", Kind: Num, Num: uint64(l.Conns)},
		Field{Key: "net-dev", Kind: Num, Num: uint64(l.NetDev)},
		Field{Key: "link-uid", Kind: Str, Str: l.UID},
		Field{Key: "peer-link-uid", Kind: Str, Str: l.PeerUID})
	socks := []string{}
	for i := range r.Sockets {
		s := &r.Sockets[i]
		socks = append(socks, s.Src.String()+" "+s.Dst.String()+" "+orNone(ports.Task(s.Comm, s.PID)))
	}
	qpns := []string{}
	for _, q := range r.QPs {
		qpns = append(qpns, strconv.FormatUint(uint64(q.LQPN), 10))
	}
	return append(o, Field{Key: "sockets", Kind: StrList, List: socks},
		Field{Key: "smc-qps", Kind: NumList, List: qpns})
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// LinkGroupTable is one line per link.
func LinkGroupTable(rows []ports.LinkGroupRow) *Table {
	t := NewTable("LG-ID", "ROLE", "TYPE", "PNETID", "CONNS", "LINK", "DEV/PORT", "STATE", "PEER GID", "SOCKETS", "[SMC] QPS")
	for i := range rows {
		r := &rows[i]
		g := &r.Group
		row := []string{ports.LinkGroupID(g.ID), g.Role, g.Type, g.PNetID, strconv.FormatUint(uint64(g.Conns), 10)}
		if l := r.Link; l != nil {
			var socks, qps []string
			for j := range r.Sockets {
				s := &r.Sockets[j]
				socks = append(socks, s.Src.String()+" "+orNone(ports.Task(s.Comm, s.PID)))
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

// SMCDeviceObject is one port of an SMC-R device (smcr device).
func SMCDeviceObject(dp *ports.DevicePort) Object {
	d, p := dp.Dev, dp.Port
	o := Object{
		{Key: "ifname", Kind: Str, Str: d.Name},
		{Key: "port", Kind: Num, Num: uint64(p.Port)},
		{Key: "pnetid", Kind: Str, Str: p.PNetID},
		{Key: "pnetid-by-user", Kind: Bool, Num: b2u(p.PNetByUser)},
		{Key: "net-dev", Kind: Num, Num: uint64(p.NetDev)},
		{Key: "active", Kind: Bool, Num: b2u(p.Active)},
		{Key: "links", Kind: Num, Num: uint64(p.Links)},
		{Key: "dev-links", Kind: Num, Num: uint64(d.Links)},
		{Key: "critical", Kind: Bool, Num: b2u(d.Critical)},
	}
	if d.PCIID != "" {
		o = append(o, Field{Key: "pci-id", Kind: Str, Str: d.PCIID})
	}
	return o
}

// SMCDeviceTable is one line per device port.
func SMCDeviceTable(dps []ports.DevicePort, netdev func(uint32) string) *Table {
	t := NewTable("DEV", "PORT", "PNETID", "NETDEV", "STATE", "LINKS", "CRITICAL")
	for _, dp := range dps {
		d, p := dp.Dev, dp.Port
		state, crit := "down", "no"
		if p.Active {
			state = "active"
		}
		if d.Critical {
			crit = "yes"
		}
		t.Append(d.Name, strconv.Itoa(int(p.Port)), p.PNetID, netdev(p.NetDev), state, strconv.FormatUint(uint64(p.Links), 10), crit)
	}
	return t
}
