// Package ports joins the host's TCP and UDP sockets (socket diagnostics)
// with the rdma_cm IDs (RDMA netlink) into one list of who holds which
// port, the rows of `rdmatrace ports`. iWARP shares the host's TCP port
// space: its connections and listeners are kernel TCP sockets that no
// process holds, and only their 4-tuples, equal to a cm_id's addresses,
// say whose they are. RoCE and InfiniBand IDs take ports of rdma_cm's own
// port spaces, which the host's sockets never see.
package ports

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// Stacks a row's holder belongs to.
const (
	StackTCP    = "tcp"     // a host TCP socket
	StackUDP    = "udp"     // a host UDP socket
	StackIWarp  = "iwarp"   // an rdma_cm ID on an iWARP device: a host TCP port
	StackRDMACM = "rdma_cm" // an rdma_cm ID elsewhere (RoCE, IB, unbound): rdma_cm's own port space
	StackSMC    = "smc"     // the TCP (CLC) socket of an SMC socket: the process holds the SMC socket
)

// Row is one port in use.
type Row struct {
	Proto    string // tcp, udp, ib, ipoib: the protocol whose port space it is in
	Stack    string
	Src, Dst netip.AddrPort
	State    string
	PID      uint32 // 0: no process holds it (or it could not be seen)
	Comm     string
	Module   string // a kernel module owning the cm_id
	Inode    uint64 // the socket's, 0 for none
	// HostPort says the row occupies the host's port space: every socket,
	// and rdma_cm IDs on iWARP devices.
	HostPort bool

	// For rows from an rdma_cm ID.
	CM      bool
	Dev     string
	DevPort uint32
	CMIDN   uint32
	PS      rdma.PortSpace
}

// Procs names the process holding a socket (enrich.Enricher does).
type Procs interface {
	SocketOwners(inodes map[uint64]bool) map[uint64]uint32
	Comm(pid uint32) string
	TGID(tid uint32) uint32
}

// Input is what Join joins: one namespace's sockets and cm_ids, and which
// devices are iWARP.
type Input struct {
	Sockets []sockdiag.Socket
	CMIDs   []rdma.Resource
	IWarp   map[string]bool // device name -> iWARP (node type RNIC)
	// SMC sockets, whose kernel TCP sockets (their CLC sockets) no
	// process holds either.
	SMC []sockdiag.SMCSocket
}

type tuple struct{ src, dst netip.AddrPort }

func norm(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// unspec makes an unspecified address of either family the same key (a
// cm_id's listener has dst 0.0.0.0:0 where inet_diag may say [::]:0).
func unspec(a netip.AddrPort) netip.AddrPort {
	a = norm(a)
	if a.Addr().IsUnspecified() || !a.Addr().IsValid() {
		return netip.AddrPortFrom(netip.Addr{}, a.Port())
	}
	return a
}

func key(src, dst netip.AddrPort) tuple { return tuple{unspec(src), unspec(dst)} }

// Join lists every socket and every rdma_cm ID once. A socket no process
// holds whose 4-tuple is a TCP-port-space cm_id's on an iWARP device is
// that cm_id's, with its process; the remaining cm_ids follow as rows of
// their own.
func Join(in Input, p Procs) []Row {
	iw := map[tuple][]int{} // iWARP TCP cm_ids by 4-tuple
	for i := range in.CMIDs {
		r := &in.CMIDs[i]
		if r.PS == rdma.PSTCP && in.IWarp[r.DevName] {
			k := key(r.Src, r.Dst)
			iw[k] = append(iw[k], i)
		}
	}
	inodes := map[uint64]bool{}
	for _, s := range in.Sockets {
		if s.Inode != 0 {
			inodes[s.Inode] = true
		}
	}
	smc := map[tuple]uint64{} // CLC 4-tuple -> the SMC socket's inode
	for _, s := range in.SMC {
		if s.Inode != 0 && s.Src.Port() != 0 {
			smc[key(s.Src, s.Dst)] = s.Inode
			inodes[s.Inode] = true
		}
	}
	owners := p.SocketOwners(inodes)
	used := make([]bool, len(in.CMIDs))
	var rows []Row
	for _, s := range in.Sockets {
		row := Row{Proto: s.Proto, Stack: s.Proto, Src: norm(s.Src), Dst: norm(s.Dst), State: s.State.String(), Inode: s.Inode, HostPort: true}
		if pid, ok := owners[s.Inode]; ok {
			row.PID, row.Comm = pid, p.Comm(pid)
		} else if ino, ok := smc[key(s.Src, s.Dst)]; ok && s.Proto == "tcp" {
			row.Stack = StackSMC
			if pid, ok := owners[ino]; ok {
				row.PID, row.Comm = pid, p.Comm(pid)
			}
		} else if s.Proto == "tcp" {
			for _, i := range iw[key(s.Src, s.Dst)] {
				if !used[i] {
					used[i] = true
					row.Stack = StackIWarp
					cmInto(&row, &in.CMIDs[i], p)
					break
				}
			}
		}
		rows = append(rows, row)
	}
	for i := range in.CMIDs {
		if used[i] {
			continue
		}
		r := &in.CMIDs[i]
		row := Row{Proto: protoOf(r.PS), Stack: StackRDMACM, Src: norm(r.Src), Dst: norm(r.Dst), State: r.CMState.String()}
		if r.PS == rdma.PSTCP && in.IWarp[r.DevName] {
			// No socket (yet): bound, not listening or connecting. The port
			// is taken from the host all the same once siw binds it.
			row.Stack, row.HostPort = StackIWarp, true
		}
		cmInto(&row, r, p)
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Src.Port(), b.Src.Port()),
			a.Src.Addr().Compare(b.Src.Addr()), cmp.Compare(a.Dst.Port(), b.Dst.Port()), a.Dst.Addr().Compare(b.Dst.Addr()),
			cmp.Compare(a.Stack, b.Stack))
	})
	return rows
}

// cmInto fills row's rdma_cm part and owner from r; threads fold into
// their process, as everywhere else.
func cmInto(row *Row, r *rdma.Resource, p Procs) {
	row.CM, row.Dev, row.DevPort, row.CMIDN, row.PS = true, r.DevName, r.Port, r.CMIDN, r.PS
	if row.Stack == StackIWarp && row.State == "" {
		row.State = r.CMState.String()
	}
	if r.Owner.Kernel() {
		row.Module = r.Owner.KernName
		return
	}
	row.PID = r.Owner.PID
	if g := p.TGID(row.PID); g != 0 {
		row.PID = g
	}
	row.Comm = r.Owner.Comm
	if row.Comm == "" && row.PID != 0 {
		row.Comm = p.Comm(row.PID)
	}
}

func protoOf(ps rdma.PortSpace) string {
	switch ps {
	case rdma.PSTCP:
		return "tcp"
	case rdma.PSUDP:
		return "udp"
	case rdma.PSIB:
		return "ib"
	case rdma.PSIPoIB:
		return "ipoib"
	}
	return "---"
}

// overlaps says whether two local addresses of one port would collide: the
// same address, or either one a wildcard of a family that takes the other.
func overlaps(a, b netip.Addr) bool {
	a, b = a.Unmap(), b.Unmap()
	switch {
	case a == b, !a.IsValid(), !b.IsValid():
		return true
	case a.IsUnspecified() && (a.Is6() || b.Is4()):
		return true // [::] takes IPv4 too unless v6only, which diag does not say
	case b.IsUnspecified() && (b.Is6() || a.Is4()):
		return true
	}
	return false
}

// Conflict is one port that rdma_cm and a host TCP socket both hold on
// overlapping addresses.
type Conflict struct {
	RDMA Row // the rdma_cm ID
	Host Row // the host socket a process holds
	// Real: the ID is on an iWARP device, whose listens and connections
	// are host TCP sockets, so one of the two cannot have its port (the
	// second to bind gets EADDRINUSE). Not real for RoCE and InfiniBand,
	// whose ports are rdma_cm's own; shown because moving the program to
	// an iWARP device would make it so.
	Real bool
}

// Conflicts finds, in rows from Join, every TCP-port-space rdma_cm ID that
// shares its port with a socket some process holds. An iWARP ID that is
// its own kernel socket is one row and no conflict with itself; TIME-WAIT
// sockets hold no one's port.
func Conflicts(rows []Row) []Conflict {
	var out []Conflict
	for _, r := range rows {
		if !r.CM || r.PS != rdma.PSTCP || r.Src.Port() == 0 {
			continue
		}
		for _, h := range rows {
			if h.Stack != StackTCP || h.PID == 0 || h.State == "TIME-WAIT" || h.Src.Port() != r.Src.Port() || !overlaps(h.Src.Addr(), r.Src.Addr()) {
				continue
			}
			out = append(out, Conflict{RDMA: r, Host: h, Real: r.Stack == StackIWarp})
		}
	}
	return out
}

// Holders are the rows that hold port on an address overlapping addr in
// the port space of proto ("tcp"): what a bind or listen that got
// EADDRINUSE there ran into. Host sockets count only when they take the
// host's port; TIME-WAIT ones hold nothing.
func Holders(rows []Row, proto string, addr netip.AddrPort) []Row {
	var out []Row
	for _, r := range rows {
		if r.Proto == proto && r.Src.Port() == addr.Port() && r.State != "TIME-WAIT" && overlaps(r.Src.Addr(), addr.Addr()) {
			out = append(out, r)
		}
	}
	return out
}
