package rdma

import (
	"net/netip"
	"strings"
)

// Device is one RDMA device (an nldev GET reply).
type Device struct {
	Index        uint32
	Name         string
	Ports        uint32 // highest port number
	NodeType     NodeType
	FWVersion    string
	NodeGUID     uint64
	SysImageGUID uint64
	CapFlags     uint64
	Protocol     string // "ib", "roce", "iw", ... (kernels >= 5.x)
	DIM          *bool  // adaptive interrupt moderation, when reported
}

// Port is one port of a device (an nldev PORT_GET reply).
type Port struct {
	DevIndex     uint32
	DevName      string
	Port         uint32
	CapFlags     uint64
	SubnetPrefix uint64
	LID          uint32
	SMLID        uint32
	LMC          uint8
	State        PortState
	PhysState    PhysState
	NetdevIndex  uint32
	Netdev       string // empty when the port has no net device
	Has          Field  // which of LID, SMLID, LMC, subnet prefix, netdev the kernel sent
}

// Summary counts a device's tracked resources (`rdma res show`).
type Summary struct {
	DevIndex uint32
	DevName  string
	Counts   []Count // in the kernel's order
}

// Count is one "name: current" entry of a Summary.
type Count struct {
	Name  string
	Value uint64
}

// Field is a set of optional resource attributes. The kernel leaves
// attributes out (no port on an unbound QP, no PID on a kernel object, no keys
// without CAP_NET_ADMIN), and renderers must tell "absent" from "zero".
type Field uint64

const (
	HasPort Field = 1 << iota
	HasLQPN
	HasRQPN
	HasRQPSN
	HasSQPSN
	HasPathMig
	HasQPType
	HasState
	HasPID
	HasPS
	HasSrcAddr
	HasDstAddr
	HasCQE
	HasUsers
	HasPollCtx
	HasDIM
	HasCQN
	HasCTXN
	HasPDN
	HasMRN
	HasCMIDN
	HasSRQN
	HasRKey
	HasLKey
	HasIOVA
	HasMRLen
	HasLocalDMALKey
	HasUnsafeGlobalRKey
	HasSRQType
	HasNetdev
	HasDevType
	HasLID
	HasSMLID
	HasLMC
	HasSubnetPrefix
)

// Owner is who holds a resource: a process (PID/TID and comm) for user
// objects, a kernel module (KernName) for kernel objects.
type Owner struct {
	PID      uint32 // thread-group id (process); 0 when unknown
	TID      uint32 // creating thread, when known; the kernel's RES_PID is this
	Comm     string // process name; for kernel objects, empty
	KernName string // module name (KBUILD_MODNAME) for kernel objects
	// Place is where the process runs (cgroup, container, namespaces);
	// nil when unknown. Shared: one per process, never written after it
	// is made.
	Place *Placement
}

// Placement is where a process runs, as containers see it: its cgroup v2
// path, the container and pod that path names, its pid in its own pid
// namespace and its network namespace. Empty fields are unknown.
type Placement struct {
	Cgroup      string // cgroup v2 path from the root of the hierarchy
	Runtime     string // container runtime: docker, containerd, cri-o, podman, slurm
	ContainerID string // the container's id as its runtime prints it (Slurm: job.step)
	PodUID      string // Kubernetes pod UID
	// PodNamespace and PodName name the pod of PodUID, where the node
	// ties them (its pod logs' directory names).
	PodNamespace, PodName string
	NSPid                 uint32 // pid in the process's own pid namespace, when that is not ours
	NetNS                 uint64 // inode of its network namespace (as /proc/PID/ns/net names it)
}

// Job is the Slurm job the cgroup path names ("42" of the step 42.0),
// "" for a process outside Slurm's jobs.
func (p *Placement) Job() string {
	if p == nil || p.Runtime != "slurm" {
		return ""
	}
	job, _, _ := strings.Cut(p.ContainerID, ".")
	return job
}

// Pod is the pod as kubectl names it, NAMESPACE/NAME, when the node tied
// its UID to a name; else "".
func (p *Placement) Pod() string {
	if p == nil || p.PodName == "" {
		return ""
	}
	return p.PodNamespace + "/" + p.PodName
}

// Kernel reports whether a kernel module owns the resource.
func (o Owner) Kernel() bool { return o.KernName != "" }

// QPRange is a range of QP numbers attached to an SRQ (Min == Max for one QP).
type QPRange struct{ Min, Max uint32 }

// Resource is one tracked kernel object of any restrack type. Which fields
// mean something depends on Type and on Has.
type Resource struct {
	Type     ResType
	DevIndex uint32
	DevName  string
	Port     uint32
	Has      Field
	// Withheld lists attributes the kernel keeps from callers without
	// CAP_NET_ADMIN (MR rkey/lkey, PD local_dma_lkey/unsafe_global_rkey): the
	// value exists but was not shown to us.
	Withheld Field

	// Identity: the restrack id of CM_ID (cm-idn), CQ (cqn), MR (mrn),
	// PD (pdn), CTX (ctxn), SRQ (srqn); QPs are named by LQPN.
	CMIDN, CQN, MRN, PDN, CTXN, SRQN uint32

	// QP and CM_ID.
	LQPN, RQPN   uint32
	RQPSN, SQPSN uint32
	QPType       QPType
	PathMig      PathMigState
	QPState      QPState // QP state (Type == ResQP)
	CMState      CMState // rdma_cm state (Type == ResCMID)
	PS           PortSpace
	Src, Dst     netip.AddrPort
	SrcZone      string // IPv6 scope of Src, when any
	DstZone      string
	Netdev       string // network device the ID is bound through (legacy dumps)
	DevType      string // link type of the bound port: IB, IW, ETH (legacy dumps)

	// CQ.
	CQE     uint32
	Users   uint64
	PollCtx PollCtx
	DIM     bool

	// MR and PD.
	RKey, LKey       uint32
	IOVA, MRLen      uint64
	LocalDMALKey     uint32
	UnsafeGlobalRKey uint32

	// SRQ.
	SRQType SRQType
	QPs     []QPRange

	Owner Owner

	// Extra holds named values that have no field of their own (unknown
	// columns of a legacy dump), in the order they were found.
	Extra []KV
}

// KV is a named string value.
type KV struct{ Key, Value string }

// Given reports whether the source gave all of f.
func (r *Resource) Given(f Field) bool { return r.Has&f == f }

// ID is the number that names the resource within its device and type:
// lqpn for QPs, the restrack id for the rest.
func (r *Resource) ID() uint32 {
	switch r.Type {
	case ResQP:
		return r.LQPN
	case ResCMID:
		return r.CMIDN
	case ResCQ:
		return r.CQN
	case ResMR:
		return r.MRN
	case ResPD:
		return r.PDN
	case ResCTX:
		return r.CTXN
	case ResSRQ:
		return r.SRQN
	}
	return 0
}

// System is the RDMA subsystem's settings (`rdma system show`).
type System struct {
	// NetNSMode is "shared" (every device visible in every network
	// namespace) or "exclusive" (a device only in its own); "" when the
	// kernel did not say.
	NetNSMode      string
	CopyOnFork     *bool // fork() keeps registered memory usable in the child
	PrivilegedQKey *bool // only CAP_NET_RAW may use the privileged Q_Key
	Monitor        *bool // the kernel sends device events (Linux 6.12+)
}

// Counter is one named statistic counter.
type Counter struct {
	Name  string
	Value uint64
}

// PortStats is a port's counters (`rdma statistic show`): the device's
// hardware counters and the kernel's own.
type PortStats struct {
	DevIndex uint32
	DevName  string
	Port     uint32
	Counters []Counter
}

// QPCounterMode is how a port binds QPs to counters (`rdma statistic qp
// mode`): Auto with the criteria of Mask, or not (manual binding).
type QPCounterMode struct {
	DevIndex uint32
	DevName  string
	Port     uint32
	Auto     bool
	ByType   bool // auto: one counter per QP type
	ByPID    bool // auto: one counter per process
}

// QPCounter is a counter bound to QPs (`rdma statistic qp show`).
type QPCounter struct {
	DevIndex uint32
	DevName  string
	Port     uint32
	ID       uint32 // cntn
	QPType   QPType
	HasType  bool
	Owner    Owner
	Counters []Counter
	LQPNs    []uint32
}
