package ports

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/smcnl"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
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

// LinkGroupID writes a link group id as smc-tools does.
func LinkGroupID(id uint32) string { return fmt.Sprintf("%08x", id) }

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

// DevicePort is one port of an SMC-R device, as smcr device lists it.
type DevicePort struct {
	Dev  *smcnl.Device
	Port *smcnl.DevicePort
}

// DevicePorts lists every port of every device.
func DevicePorts(ds []smcnl.Device) []DevicePort {
	var out []DevicePort
	for i := range ds {
		for j := range ds[i].Ports {
			out = append(out, DevicePort{&ds[i], &ds[i].Ports[j]})
		}
	}
	return out
}
