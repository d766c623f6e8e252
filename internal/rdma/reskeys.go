package rdma

import (
	"net/netip"
	"strconv"
)

// ResKey is one of iproute2's keys of a resource attribute, as `rdma -j
// res` writes it, `rdma res` prints it and its filters take it: the one
// place each name is spelled. The JSON writer, the filters, the readers
// of rdma's text and of trace -j recordings name keys by this table.
type ResKey struct {
	Name string
	// Has is the presence bit: the source gave the value (the kernel
	// leaves attributes out). 0 when the key is always present where its
	// type has it.
	Has Field
	// Hex: iproute2 prints the number as a hex string (keys, addresses).
	Hex bool
	// Num reads a number; nil for a text key.
	Num func(r *Resource) uint64
	// Str reads a text value; nil for a number.
	Str func(r *Resource) string
	// SetNum stores a number and its presence bit; nil for a text key.
	SetNum func(r *Resource, v uint64)
}

// Present says whether r has the key's value (always, without a presence bit).
func (k *ResKey) Present(r *Resource) bool { return k.Has == 0 || r.Has&k.Has != 0 }

func u32Key(name string, f Field, p func(r *Resource) *uint32) ResKey {
	return ResKey{Name: name, Has: f, Num: func(r *Resource) uint64 { return uint64(*p(r)) },
		SetNum: func(r *Resource, v uint64) { *p(r), r.Has = uint32(v), r.Has|f }}
}

func u64Key(name string, f Field, p func(r *Resource) *uint64) ResKey {
	return ResKey{Name: name, Has: f, Num: func(r *Resource) uint64 { return *p(r) },
		SetNum: func(r *Resource, v uint64) { *p(r), r.Has = v, r.Has|f }}
}

func hexKey(k ResKey) ResKey { k.Hex = true; return k }

// iproute2's resource keys.
var (
	KeyIfindex = u32Key("ifindex", 0, func(r *Resource) *uint32 { return &r.DevIndex })
	KeyIfname  = ResKey{Name: "ifname", Str: func(r *Resource) string { return r.DevName }}
	KeyPort    = u32Key("port", HasPort, func(r *Resource) *uint32 { return &r.Port })

	KeyLQPN    = u32Key("lqpn", HasLQPN, func(r *Resource) *uint32 { return &r.LQPN })
	KeyRQPN    = u32Key("rqpn", HasRQPN, func(r *Resource) *uint32 { return &r.RQPN })
	KeyRQPSN   = u32Key("rq-psn", HasRQPSN, func(r *Resource) *uint32 { return &r.RQPSN })
	KeySQPSN   = u32Key("sq-psn", HasSQPSN, func(r *Resource) *uint32 { return &r.SQPSN })
	KeyPathMig = ResKey{Name: "path-mig-state", Has: HasPathMig, Str: func(r *Resource) string { return r.PathMig.String() }}
	// KeyType is a QP's type, or an SRQ's (their types never share a bit).
	KeyType = ResKey{Name: "type", Has: HasQPType | HasSRQType, Str: func(r *Resource) string {
		if r.Type == ResSRQ {
			return r.SRQType.String()
		}
		return r.QPType.String()
	}}
	// KeyQPType is a CM_ID's QP type.
	KeyQPType = ResKey{Name: "qp-type", Has: HasQPType, Str: func(r *Resource) string { return r.QPType.String() }}
	// KeyState is a QP's state or a CM_ID's, by the resource's type.
	KeyState = ResKey{Name: "state", Has: HasState, Str: func(r *Resource) string {
		if r.Type == ResCMID {
			return r.CMState.String()
		}
		return r.QPState.String()
	}}
	KeyPS      = ResKey{Name: "ps", Has: HasPS, Str: func(r *Resource) string { return r.PS.String() }}
	KeyCMIDN   = u32Key("cm-idn", HasCMIDN, func(r *Resource) *uint32 { return &r.CMIDN })
	KeySrcAddr = ResKey{Name: "src-addr", Has: HasSrcAddr, Str: func(r *Resource) string { return IPRouteAddr(r.Src) }}
	KeyDstAddr = ResKey{Name: "dst-addr", Has: HasDstAddr, Str: func(r *Resource) string { return IPRouteAddr(r.Dst) }}
	KeyDevType = ResKey{Name: "dev-type", Str: func(r *Resource) string { return r.DevType }}

	KeyCQN     = u32Key("cqn", HasCQN, func(r *Resource) *uint32 { return &r.CQN })
	KeyCQE     = u32Key("cqe", HasCQE, func(r *Resource) *uint32 { return &r.CQE })
	KeyUsers   = u64Key("users", HasUsers, func(r *Resource) *uint64 { return &r.Users })
	KeyPollCtx = ResKey{Name: "poll-ctx", Has: HasPollCtx, Str: func(r *Resource) string { return r.PollCtx.String() }}
	KeyDIM     = ResKey{Name: "adaptive-moderation", Has: HasDIM}
	KeyCTXN    = u32Key("ctxn", HasCTXN, func(r *Resource) *uint32 { return &r.CTXN })

	KeyMRN              = u32Key("mrn", HasMRN, func(r *Resource) *uint32 { return &r.MRN })
	KeyRKey             = hexKey(u32Key("rkey", HasRKey, func(r *Resource) *uint32 { return &r.RKey }))
	KeyLKey             = hexKey(u32Key("lkey", HasLKey, func(r *Resource) *uint32 { return &r.LKey }))
	KeyIOVA             = hexKey(u64Key("iova", HasIOVA, func(r *Resource) *uint64 { return &r.IOVA }))
	KeyMRLen            = u64Key("mrlen", HasMRLen, func(r *Resource) *uint64 { return &r.MRLen })
	KeyPDN              = u32Key("pdn", HasPDN, func(r *Resource) *uint32 { return &r.PDN })
	KeyLocalDMALKey     = hexKey(u32Key("local_dma_lkey", HasLocalDMALKey, func(r *Resource) *uint32 { return &r.LocalDMALKey }))
	KeyUnsafeGlobalRKey = hexKey(u32Key("unsafe_global_rkey", HasUnsafeGlobalRKey, func(r *Resource) *uint32 { return &r.UnsafeGlobalRKey }))
	KeySRQN             = u32Key("srqn", HasSRQN, func(r *Resource) *uint32 { return &r.SRQN })

	// KeyPID is the owner's pid as the kernel gives it (the creating thread).
	KeyPID = u32Key("pid", HasPID, func(r *Resource) *uint32 { return &r.Owner.PID })
	// KeyComm is the owner's name: a kernel owner's module (without a pid),
	// else the process name.
	KeyComm = ResKey{Name: "comm", Str: func(r *Resource) string {
		if r.Owner.KernName != "" {
			return r.Owner.KernName
		}
		return r.Owner.Comm
	}}
)

// ResKeys are the table, each key once.
var ResKeys = []*ResKey{&KeyIfindex, &KeyIfname, &KeyPort, &KeyLQPN, &KeyRQPN, &KeyRQPSN, &KeySQPSN, &KeyPathMig,
	&KeyType, &KeyQPType, &KeyState, &KeyPS, &KeyCMIDN, &KeySrcAddr, &KeyDstAddr, &KeyDevType,
	&KeyCQN, &KeyCQE, &KeyUsers, &KeyPollCtx, &KeyDIM, &KeyCTXN,
	&KeyMRN, &KeyRKey, &KeyLKey, &KeyIOVA, &KeyMRLen, &KeyPDN, &KeyLocalDMALKey, &KeyUnsafeGlobalRKey, &KeySRQN,
	&KeyPID, &KeyComm}

// IPRouteAddr writes an address the way iproute2 does: "ip:port", with no
// brackets even for IPv6.
func IPRouteAddr(ap netip.AddrPort) string {
	return ap.Addr().String() + ":" + strconv.Itoa(int(ap.Port()))
}
