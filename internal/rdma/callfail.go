package rdma

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// CallFail is what an EvCallFail says: a call that created nothing (a
// create, an open, a registration, an rdma_cm step that failed inside the
// call), what it asked for, the device's limits then, and the limit that
// refused it where the kernel showed it.
type CallFail struct {
	// Op is the call: a verb's create (create_qp, reg_mr, alloc_pd, ...;
	// get_context for an open of the device) or an rdma_cm step
	// (rdma_resolve_addr, rdma_bind_addr, ...). A small fixed set.
	Op    string
	Errno int32 // positive, as errno
	Asked Asked
	// Caps are the device's limits when it failed; Caps.Valid false: not
	// known (an rdma_cm step, a record without them).
	Caps DevCaps
	// Limit is what refused it, when a deeper hook saw it.
	Limit CallLimit
}

// AskedFlag says which parts of Asked are set.
type AskedFlag uint8

const (
	AskedQP  AskedFlag = 1 << iota // the QP's capabilities and type
	AskedCQE                       // a CQ's entries
	AskedMR                        // an MR's length and access
)

// Asked is what a failed create asked for.
type Asked struct {
	Has                    AskedFlag
	QPType                 QPType
	MaxSendWR, MaxRecvWR   uint32
	MaxSendSGE, MaxRecvSGE uint32
	MaxInlineData          uint32
	CQE                    uint32
	Length                 uint64 // bytes
	Access                 uint32 // IB_ACCESS_* flags
}

// DevCaps are a device's limits (struct ib_device_attr), as the kernel
// had them when a call failed.
type DevCaps struct {
	Valid                  bool
	MaxQPWR                uint32
	MaxSendSGE, MaxRecvSGE uint32
	MaxCQE                 uint32
	MaxMRSize              uint64
	MaxQP, MaxCQ, MaxMR    uint32
	MaxPD, MaxSRQ          uint32
}

// LimitKind is what refused a call.
type LimitKind uint8

const (
	LimitNone LimitKind = iota
	// LimitRDMACgroup: the rdma cgroup refused to charge the object
	// (rdmacg_try_charge's -EAGAIN, before the driver is asked).
	LimitRDMACgroup
	// LimitMemlock: ib_umem_get could not pin the MR's pages: what the
	// process had pinned and the MR's pages exceed RLIMIT_MEMLOCK, and the
	// process lacks CAP_IPC_LOCK.
	LimitMemlock
)

var limitNames = names{"", "rdma-cgroup", "memlock"}

func (k LimitKind) String() string { return limitNames.name(int(k), "") }

// ParseLimitKind parses "rdma-cgroup" or "memlock".
func ParseLimitKind(s string) (LimitKind, error) {
	v, err := limitNames.parse("limit", s)
	return LimitKind(v), err
}

// CallLimit is the limit that refused a call, with its numbers.
type CallLimit struct {
	Kind LimitKind
	// CgroupRes is the rdma cgroup's resource refused: hca_handle (a
	// device context, an open of the device) or hca_object (any object).
	CgroupRes string
	// Cgroup is the cgroup whose rdma.max was reached, read when the
	// event came; nil when not read (a recording of a trace that did not
	// read it, no cgroup v2 hierarchy).
	Cgroup *RDMACgroupUse
	// Memlock: RLIMIT_MEMLOCK in bytes, the pages pinned before and the
	// pages the MR needed (4 KiB pages, as the kernel counts them).
	Memlock, Pinned, NPages uint64
}

// RDMACgroupUse is one cgroup's rdma.max and rdma.current for a device
// and resource.
type RDMACgroupUse struct {
	Path    string // from the hierarchy's root
	Max     int64  // -1: max (no limit)
	Current int64
}

// RDMACgroupResources name enum rdmacg_resource_type.
var RDMACgroupResources = []string{"hca_handle", "hca_object"}

// IsCMStep says whether the op is an rdma_cm step rather than a verb's
// create.
func (c *CallFail) IsCMStep() bool { return strings.HasPrefix(c.Op, "rdma_") }

// ResType is the restrack type of the object the call would have made,
// ok false for those restrack does not track (an MW, an AH, ...) and for
// rdma_cm steps (whose ID is the event's resource).
func (c *CallFail) ResType() (ResType, bool) {
	switch c.Op {
	case "get_context":
		return ResCTX, true
	case "alloc_pd":
		return ResPD, true
	case "create_cq":
		return ResCQ, true
	case "create_qp", "open_qp":
		return ResQP, true
	case "create_srq":
		return ResSRQ, true
	case "reg_mr", "reg_dmabuf_mr":
		return ResMR, true
	}
	return 0, false
}

// ErrnoName is an errno's symbol (EINVAL), or its number.
func ErrnoName(errno int32) string {
	if n := unix.ErrnoName(syscall.Errno(errno)); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(errno))
}

// CallFailWhy is the sentence of a failed call: what failed and with which
// errno, then the limit it hit, named with its numbers where the kernel
// showed it (the rdma cgroup, RLIMIT_MEMLOCK) or the arithmetic shows it
// (what was asked beside the device's limits).
//
//	create_qp failed (EINVAL): max_send_wr 40000 > rxe0's max_qp_wr 16384
//	reg_mr of 1 MiB failed (ENOMEM): RLIMIT_MEMLOCK 64 KiB, 0 KiB pinned already
//	create_cq failed (EAGAIN): rdma cgroup /pod-b's rdma.max hca_object=100, 100 in use on rxe0
//	rdma_resolve_addr to 10.99.77.77 failed (ENETUNREACH): no route to 10.99.77.77 from any RDMA device
func CallFailWhy(e *Event) string {
	c := &e.CallFail
	var b strings.Builder
	b.WriteString(c.Op)
	if c.Asked.Has&AskedMR != 0 {
		b.WriteString(" of " + Bytes(c.Asked.Length))
	}
	if c.IsCMStep() {
		switch {
		case e.Dst.IsValid() && c.Op != "rdma_bind_addr":
			b.WriteString(" to " + e.Dst.Addr().Unmap().String())
		case e.Given(HasSrcAddr) && e.Src.IsValid():
			b.WriteString(" on " + e.Src.String())
		}
	}
	b.WriteString(" failed (" + ErrnoName(c.Errno) + ")")
	if s := limitWords(e); s != "" {
		b.WriteString(": " + s)
	} else if s := errnoWords(e); s != "" {
		b.WriteString(": " + s)
	}
	return b.String()
}

func devOf(e *Event) string {
	if e.Has(EvHasDev) && e.DevName != "" {
		return e.DevName
	}
	return "the device"
}

// limitWords names the limit: the one the kernel showed, else the first
// of the device's that what was asked exceeds.
func limitWords(e *Event) string {
	c := &e.CallFail
	l := &c.Limit
	switch l.Kind {
	case LimitRDMACgroup:
		if cg := l.Cgroup; cg != nil {
			max := "max"
			if cg.Max >= 0 {
				max = strconv.FormatInt(cg.Max, 10)
			}
			return fmt.Sprintf("rdma cgroup %s's rdma.max %s=%s, %d in use on %s", cg.Path, l.CgroupRes, max, cg.Current, devOf(e))
		}
		return "the rdma cgroup refused another " + l.CgroupRes + " on " + devOf(e) + " (its rdma.max is reached)"
	case LimitMemlock:
		return fmt.Sprintf("RLIMIT_MEMLOCK %s, %s pinned already, %s more needed", Bytes(l.Memlock), Bytes(l.Pinned*4096), Bytes(l.NPages*4096))
	}
	if !c.Caps.Valid {
		return ""
	}
	a, d, dev := &c.Asked, &c.Caps, devOf(e)
	if out := c.OverCaps(dev); len(out) > 0 {
		return strings.Join(out, ", ")
	}
	// Nothing exceeded: say what was asked, for the reader to judge.
	switch {
	case a.Has&AskedQP != 0:
		return fmt.Sprintf("asked %s QP with %d/%d send/recv WRs, %d/%d SGEs, %d inline (%s allows %d WRs, %d/%d SGEs)",
			a.QPType, a.MaxSendWR, a.MaxRecvWR, a.MaxSendSGE, a.MaxRecvSGE, a.MaxInlineData, dev, d.MaxQPWR, d.MaxSendSGE, d.MaxRecvSGE)
	case a.Has&AskedCQE != 0:
		return fmt.Sprintf("asked %d entries (%s allows %d)", a.CQE, dev, d.MaxCQE)
	}
	return ""
}

// OverCaps says each thing asked that exceeds the device's limits
// (dev names the device in the words): "max_send_wr 40000 > rxe0's
// max_qp_wr 16384". None when the limits are not known or nothing
// exceeds them.
func (c *CallFail) OverCaps(dev string) []string {
	if !c.Caps.Valid {
		return nil
	}
	a, d := &c.Asked, &c.Caps
	var out []string
	over := func(what string, asked uint32, cap string, max uint32) {
		if max != 0 && asked > max {
			out = append(out, fmt.Sprintf("%s %d > %s's %s %d", what, asked, dev, cap, max))
		}
	}
	if a.Has&AskedQP != 0 {
		over("max_send_wr", a.MaxSendWR, "max_qp_wr", d.MaxQPWR)
		over("max_recv_wr", a.MaxRecvWR, "max_qp_wr", d.MaxQPWR)
		over("max_send_sge", a.MaxSendSGE, "max_send_sge", d.MaxSendSGE)
		over("max_recv_sge", a.MaxRecvSGE, "max_recv_sge", d.MaxRecvSGE)
	}
	if a.Has&AskedCQE != 0 {
		over("cqe", a.CQE, "max_cqe", d.MaxCQE)
	}
	if a.Has&AskedMR != 0 && d.MaxMRSize != 0 && a.Length > d.MaxMRSize {
		out = append(out, fmt.Sprintf("length %s > %s's max_mr_size %s", Bytes(a.Length), dev, Bytes(d.MaxMRSize)))
	}
	return out
}

// errnoWords says what an errno means for the call where it is
// unambiguous, else the C library's words.
func errnoWords(e *Event) string {
	c := &e.CallFail
	dst := ""
	if e.Dst.IsValid() {
		dst = e.Dst.Addr().Unmap().String()
	}
	switch {
	case c.Op == "rdma_resolve_addr" && (c.Errno == int32(unix.ENETUNREACH) || c.Errno == int32(unix.EHOSTUNREACH)) && dst != "":
		return "no route to " + dst + " from any RDMA device"
	case c.Op == "rdma_resolve_addr" && c.Errno == int32(unix.ENODEV) && dst != "":
		return "the route to " + dst + " leaves through a net device no RDMA device is on"
	case c.Op == "rdma_bind_addr" && c.Errno == int32(unix.EADDRNOTAVAIL):
		return "the address is on no RDMA device"
	case c.Op == "rdma_bind_addr" && c.Errno == int32(unix.ENODEV):
		return "no RDMA device has the address"
	case c.Errno == int32(unix.EAGAIN) && !c.IsCMStep():
		return "the rdma cgroup or the device refused more objects"
	}
	return syscall.Errno(c.Errno).Error()
}

// Bytes writes n bytes as B, KiB, MiB or GiB, exact where it can be.
func Bytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && n >= 1024 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return strconv.FormatUint(n, 10) + " " + units[i]
}

// GIDChange is what an EvGIDChange says: a GID added to or deleted from a
// port's table (the device and port are the event's).
type GIDChange struct {
	Added  bool // false: deleted
	GID    netip.Addr
	Index  uint32
	Type   GIDType
	Netdev string
}

// GIDChangeText is a GID change in words: "added GID ::ffff:10.9.9.9
// (RoCE v2, index 3, eth1)".
func GIDChangeText(g *GIDChange) string {
	op := "deleted"
	if g.Added {
		op = "added"
	}
	s := op + " GID " + g.GID.String() + " (" + g.Type.Name(g.Netdev != "") + ", index " + strconv.FormatUint(uint64(g.Index), 10)
	if g.Netdev != "" {
		s += ", " + g.Netdev
	}
	return s + ")"
}
