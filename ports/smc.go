package ports

import (
	"fmt"
	"strconv"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/rdma"
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
		for _, q := range qps {
			if q.Owner.KernName == "smc" && q.DevName == s.Link.Dev && q.Port == uint32(s.Link.Port) {
				rows[i].QPs = append(rows[i].QPs, q)
			}
		}
	}
	return rows
}

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
