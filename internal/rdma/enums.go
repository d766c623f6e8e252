// Package rdma is rdmatrace's shared vocabulary: devices, ports, resources
// and events of the kernel's RDMA stack, with the kernel's enums and the names
// iproute2's rdma tool prints for them. It does no I/O: producers (netlink,
// BPF, dump parsers) emit these values and renderers consume them.
package rdma

import (
	"fmt"
	"strings"
)

// ResType is the kernel's enum rdma_restrack_type (include/rdma/restrack.h).
type ResType uint8

const (
	ResPD      ResType = 0
	ResCQ      ResType = 1
	ResQP      ResType = 2
	ResCMID    ResType = 3
	ResMR      ResType = 4
	ResCTX     ResType = 5
	ResCounter ResType = 6
	ResSRQ     ResType = 7
)

var resTypeNames = [...]string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "counter", "srq"}

// String gives the name iproute2 uses for the object (`rdma res show qp`).
func (t ResType) String() string {
	if int(t) < len(resTypeNames) {
		return resTypeNames[t]
	}
	return fmt.Sprintf("restrack-%d", uint8(t))
}

// ResourceTypes lists the types `rdma res` dumps, in iproute2's summary order.
var ResourceTypes = []ResType{ResPD, ResCQ, ResQP, ResCMID, ResMR, ResCTX, ResSRQ}

// ResTypeNamed is the type the kernel's restrack code names s ("QP",
// "CM_ID", "COUNTER"...; any case): an exact name, no prefix.
func ResTypeNamed(s string) (ResType, bool) {
	for i, n := range resTypeNames {
		if strings.EqualFold(n, s) {
			return ResType(i), true
		}
	}
	return 0, false
}

// ParseResType accepts a type name ("qp", "cm_id", ...) or a unique prefix
// of one, as iproute2 does for its object names.
func ParseResType(s string) (ResType, error) {
	s = strings.ToLower(s)
	var found []ResType
	for _, t := range ResourceTypes {
		if t.String() == s {
			return t, nil
		}
		if strings.HasPrefix(t.String(), s) && s != "" {
			found = append(found, t)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	if len(found) > 1 {
		amb := make([]string, len(found))
		for i, t := range found {
			amb[i] = t.String()
		}
		return 0, fmt.Errorf("ambiguous resource type %q: it could be %s", s, strings.Join(amb, ", "))
	}
	names := make([]string, len(ResourceTypes))
	for i, t := range ResourceTypes {
		names[i] = t.String()
	}
	return 0, fmt.Errorf("unknown resource type %q: valid types are %s", s, strings.Join(names, ", "))
}

// names is a kernel enum's table of printable names, indexed by value.
type names []string

func (n names) name(v int, unknown string) string {
	if v >= 0 && v < len(n) && n[v] != "" {
		return n[v]
	}
	return unknown
}

// parse maps a name back to its value, case-insensitively.
func (n names) parse(kind, s string) (int, error) {
	for i, name := range n {
		if name != "" && strings.EqualFold(name, s) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q: valid values are %s", kind, s, n.list())
}

func (n names) list() string {
	var out []string
	for _, name := range n {
		if name != "" {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// QPType is enum ib_qp_type.
type QPType uint8

const (
	QPTypeSMI    QPType = 0
	QPTypeGSI    QPType = 1
	QPTypeRC     QPType = 2
	QPTypeUC     QPType = 3
	QPTypeUD     QPType = 4
	QPTypeDriver QPType = 0xFF
)

var qpTypeNames = names{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE", "", "RAW_PACKET", "XRC_INI", "XRC_TGT"}

func (t QPType) String() string {
	if t == QPTypeDriver {
		return "DRIVER"
	}
	return qpTypeNames.name(int(t), "UNKNOWN")
}

// ParseQPType parses a QP type name such as "RC".
func ParseQPType(s string) (QPType, error) {
	if strings.EqualFold(s, "DRIVER") {
		return QPTypeDriver, nil
	}
	v, err := qpTypeNames.parse("QP type", s)
	if err != nil {
		return 0, fmt.Errorf("unknown QP type %q: valid values are %s", s, QPTypeNames())
	}
	return QPType(v), nil
}

// QPTypeNames lists the valid QP type names.
func QPTypeNames() string { return qpTypeNames.list() + ", DRIVER" }

// QPState is enum ib_qp_state.
type QPState uint8

const (
	QPStateReset QPState = 0
	QPStateInit  QPState = 1
	QPStateRTR   QPState = 2
	QPStateRTS   QPState = 3
	QPStateSQD   QPState = 4
	QPStateSQE   QPState = 5
	QPStateErr   QPState = 6
)

var qpStateNames = names{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

func (s QPState) String() string { return qpStateNames.name(int(s), "UNKNOWN") }

// ParseQPState parses a QP state name such as "RTS".
func ParseQPState(s string) (QPState, error) {
	v, err := qpStateNames.parse("QP state", s)
	return QPState(v), err
}

// QPStateNames lists the valid QP state names.
func QPStateNames() string { return qpStateNames.list() }

// PathMigState is enum ib_mig_state.
type PathMigState uint8

var pathMigNames = names{"MIGRATED", "REARM", "ARMED"}

func (s PathMigState) String() string { return pathMigNames.name(int(s), "UNKNOWN") }

// ParsePathMigState parses a path migration state name.
func ParsePathMigState(s string) (PathMigState, error) {
	v, err := pathMigNames.parse("path-mig-state", s)
	return PathMigState(v), err
}

// PathMigStateNames lists the valid path migration state names.
func PathMigStateNames() string { return pathMigNames.list() }

// CMState is enum rdma_cm_state (drivers/infiniband/core/cma_priv.h).
type CMState uint8

const (
	CMIdle          CMState = 0
	CMAddrQuery     CMState = 1
	CMAddrResolved  CMState = 2
	CMRouteQuery    CMState = 3
	CMRouteResolved CMState = 4
	CMConnect       CMState = 5
	CMDisconnect    CMState = 6
	CMAddrBound     CMState = 7
	CMListen        CMState = 8
	CMDeviceRemoval CMState = 9
	CMDestroying    CMState = 10
)

var cmStateNames = names{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED",
	"CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}

func (s CMState) String() string { return cmStateNames.name(int(s), "UNKNOWN") }

// ParseCMState parses an rdma_cm state name such as "LISTEN".
func ParseCMState(s string) (CMState, error) {
	v, err := cmStateNames.parse("rdma_cm state", s)
	return CMState(v), err
}

// CMStateNames lists the valid rdma_cm state names.
func CMStateNames() string { return cmStateNames.list() }

// PortSpace is enum rdma_ucm_port_space.
type PortSpace uint32

const (
	PSIPoIB PortSpace = 0x0002
	PSIB    PortSpace = 0x013F
	PSTCP   PortSpace = 0x0106
	PSUDP   PortSpace = 0x0111
)

// String names the port space. iproute2 prints "IPoIB" for RDMA_PS_IB as
// well; we print "IB", which is what 0x013F is.
func (p PortSpace) String() string {
	switch p {
	case PSIPoIB:
		return "IPoIB"
	case PSIB:
		return "IB"
	case PSTCP:
		return "TCP"
	case PSUDP:
		return "UDP"
	}
	return "---"
}

// ParsePortSpace parses a port space name ("TCP", "UDP", "IB", "IPoIB").
func ParsePortSpace(s string) (PortSpace, error) {
	for _, p := range []PortSpace{PSTCP, PSUDP, PSIB, PSIPoIB} {
		if strings.EqualFold(p.String(), s) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown port space %q: valid values are %s", s, PortSpaceNames())
}

// PortSpaceNames lists the valid port space names.
func PortSpaceNames() string { return "TCP, UDP, IB, IPoIB" }

// PollCtx is enum ib_poll_context. iproute2 6.1 indexes its table from
// DIRECT, which the kernel numbers 3, so it prints every value shifted; we
// print the kernel's names.
type PollCtx uint8

var pollCtxNames = names{"SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE", "DIRECT"}

func (p PollCtx) String() string { return pollCtxNames.name(int(p), "UNKNOWN") }

// ParsePollCtx parses a poll context name.
func ParsePollCtx(s string) (PollCtx, error) {
	v, err := pollCtxNames.parse("poll-ctx", s)
	return PollCtx(v), err
}

// PollCtxNames lists the valid poll context names.
func PollCtxNames() string { return pollCtxNames.list() }

// SRQType is enum ib_srq_type.
type SRQType uint8

var srqTypeNames = names{"BASIC", "XRC", "TM"}

func (t SRQType) String() string { return srqTypeNames.name(int(t), "UNKNOWN") }

// ParseSRQType parses an SRQ type name.
func ParseSRQType(s string) (SRQType, error) {
	v, err := srqTypeNames.parse("SRQ type", s)
	return SRQType(v), err
}

// SRQTypeNames lists the valid SRQ type names.
func SRQTypeNames() string { return srqTypeNames.list() }

// NodeType is enum rdma_node_type, as iproute2 names it.
type NodeType uint8

var nodeTypeNames = names{"unknown", "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"}

func (t NodeType) String() string { return nodeTypeNames.name(int(t), "unknown") }

// PortState is enum ib_port_state.
type PortState uint8

var portStateNames = names{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func (s PortState) String() string { return portStateNames.name(int(s), "UNKNOWN") }

// PhysState is the IB port physical state.
type PhysState uint8

var physStateNames = names{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "", "OPA_OFFLINE", "", "OPA_TEST"}

func (s PhysState) String() string { return physStateNames.name(int(s), "UNKNOWN") }

// CMEvent is enum rdma_cm_event_type.
type CMEvent uint32

var cmEventNames = names{"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED",
	"ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR",
	"ADDR_CHANGE", "TIMEWAIT_EXIT"}

func (e CMEvent) String() string {
	return cmEventNames.name(int(e), fmt.Sprintf("EVENT_%d", uint32(e)))
}

// ParseCMEvent parses an rdma_cm event name such as "ESTABLISHED".
func ParseCMEvent(s string) (CMEvent, error) {
	v, err := cmEventNames.parse("rdma_cm event", strings.TrimPrefix(strings.ToUpper(s), "RDMA_CM_EVENT_"))
	if err != nil {
		return 0, fmt.Errorf("unknown rdma_cm event %q: valid values are %s", s, CMEventNames())
	}
	return CMEvent(v), nil
}

// CMEventNames lists the valid rdma_cm event names.
func CMEventNames() string { return cmEventNames.list() }
