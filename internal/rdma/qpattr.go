package rdma

import (
	"fmt"
	"net/netip"
	"strconv"
)

// QPAttrMask is the kernel's enum ib_qp_attr_mask: which attributes a
// modify sets. Only the bits a qp-attr event reports are named.
type QPAttrMask uint32

const (
	QPMaskAV          QPAttrMask = 1 << 7  // IB_QP_AV: the address vector, with the source GID
	QPMaskPathMTU     QPAttrMask = 1 << 8  // IB_QP_PATH_MTU
	QPMaskTimeout     QPAttrMask = 1 << 9  // IB_QP_TIMEOUT: the local ACK timeout
	QPMaskRetryCnt    QPAttrMask = 1 << 10 // IB_QP_RETRY_CNT
	QPMaskRNRRetry    QPAttrMask = 1 << 11 // IB_QP_RNR_RETRY
	QPMaskMinRNRTimer QPAttrMask = 1 << 15 // IB_QP_MIN_RNR_TIMER
)

// QPAttrMaskAll is every bit a qp-attr event is emitted for.
const QPAttrMaskAll = QPMaskAV | QPMaskPathMTU | QPMaskTimeout | QPMaskRetryCnt | QPMaskRNRRetry | QPMaskMinRNRTimer

// GIDType is the kernel's enum ib_gid_type.
type GIDType uint8

const (
	GIDTypeIB     GIDType = 0 // IB, or RoCE v1 on an Ethernet port (kernels before 4.x's split named both so)
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2 // RoCE over UDP
)

// Name names the type as show_gids does; eth says the GID is on an
// Ethernet port (it has a netdev), where type 0 is RoCE v1 too.
func (t GIDType) Name(eth bool) string {
	switch {
	case t == GIDTypeRoCEv2:
		return "RoCE v2"
	case t == GIDTypeRoCEv1, t == GIDTypeIB && eth:
		return "RoCE v1"
	case t == GIDTypeIB:
		return "IB"
	}
	return "type " + strconv.Itoa(int(t))
}

// ParseGIDType reads a name Name gives.
func ParseGIDType(s string) (GIDType, error) {
	switch s {
	case "IB":
		return GIDTypeIB, nil
	case "RoCE v1":
		return GIDTypeRoCEv1, nil
	case "RoCE v2":
		return GIDTypeRoCEv2, nil
	}
	return 0, fmt.Errorf("unknown GID type %q: expected IB, RoCE v1 or RoCE v2", s)
}

// QPAttr is what a qp-attr event says of a QP's transport settings: the
// values a successful modify set (Mask says which), and the source GID
// the QP sends from after it, with that GID's netdev.
type QPAttr struct {
	Mask        QPAttrMask
	Timeout     uint8 // the local ACK timeout's exponent: 4.096 µs × 2^Timeout, 0 infinite
	RetryCnt    uint8 // retries of a lost packet before the QP errors
	RNRRetry    uint8 // retries of a receiver-not-ready NAK; 7 is for ever
	MinRNRTimer uint8 // what the peer waits after this QP's RNR NAK (the IBTA table); 0 is 655.36 ms
	PathMTU     uint8 // enum ib_mtu: 1 is 256 bytes ... 5 is 4096

	HasGID    bool // the QP's source GID is known
	SGID      netip.Addr
	SGIDIndex uint16
	GIDType   GIDType

	HasNdev bool // the GID's netdev (RoCE): Ndev, NdevMTU, NetNS
	Ndev    string
	NdevMTU uint32
	NetNS   uint64 // the netdev's network namespace (inode number); 0 unknown
	HasVLAN bool
	VLAN    uint16

	HasGRH bool // the modify set an address vector with a GRH: DGID
	DGID   netip.Addr
}

// Sets says whether the modify set all of m.
func (a *QPAttr) Sets(m QPAttrMask) bool { return a.Mask&m == m }

// PathMTUBytes is the path MTU in bytes (0: not a valid enum ib_mtu).
func PathMTUBytes(mtu uint8) uint32 {
	if mtu < 1 || mtu > 5 {
		return 0
	}
	return 256 << (mtu - 1)
}

// PathMTUEnum is the enum ib_mtu of a size in bytes (0: none is).
func PathMTUEnum(bytes uint32) uint8 {
	for m := uint8(1); m <= 5; m++ {
		if PathMTUBytes(m) == bytes {
			return m
		}
	}
	return 0
}

// RoCEHeaders is what RoCE adds to a payload on the wire, as ib_core's
// iboe_get_mtu counts it: GRH, UDP, BTH, the XRC and atomic extended
// headers, and the ICRC.
const RoCEHeaders = 40 + 8 + 12 + 4 + 28 + 4

// RoCEPathMTU is the largest path MTU a netdev's MTU carries (iboe_get_mtu), in bytes.
func RoCEPathMTU(ndevMTU uint32) uint32 {
	for m := uint8(5); m >= 1; m-- {
		if PathMTUBytes(m)+RoCEHeaders <= ndevMTU {
			return PathMTUBytes(m)
		}
	}
	return 0
}

// TimeoutNS is the local ACK timeout in ns (4.096 µs × 2^t); 0 is infinite.
func TimeoutNS(t uint8) uint64 {
	if t == 0 || t > 31 {
		return 0
	}
	return 4096 << t
}

// minRNRTimerUS is the IBTA's table of RNR NAK timer values, in
// hundredths of a millisecond (10 µs).
var minRNRTimerUS = [32]uint32{65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152}

// MinRNRTimerNS is what min_rnr_timer tells the peer to wait, in ns.
func MinRNRTimerNS(v uint8) uint64 {
	if v > 31 {
		return 0
	}
	return uint64(minRNRTimerUS[v]) * 10_000
}

// fmtMS writes ns as milliseconds with what precision they need:
// 655.36 ms, 0.01 ms, 67.1 ms.
func fmtMS(ns uint64) string {
	ms := float64(ns) / 1e6
	switch {
	case ms >= 100_000:
		return strconv.FormatFloat(ms/1000, 'f', 0, 64) + " s"
	case ms >= 1000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'g', 4, 64) + " ms"
}

// The risks a QP's settings carry, as Risks names them.
const (
	RiskRNRWait        = "rnr-wait"         // min_rnr_timer 0: each RNR NAK stalls the peer 655 ms
	RiskRNRInfinite    = "rnr-infinite"     // rnr_retry 7: a receiver that never posts stalls the sender for ever
	RiskNoTimeout      = "no-timeout"       // timeout 0: a dead peer is never noticed
	RiskLongTimeout    = "long-timeout"     // timeout 24 or more: over a minute per retry
	RiskShortTimeout   = "short-timeout"    // timeout under 8: retries before an ACK can come back
	RiskNoRetry        = "no-retry"         // retry_cnt 0: one lost packet errors the QP
	RiskLinkLocalGID   = "link-local-gid"   // the source GID is fe80::/10: not routable
	RiskRoCEv1         = "roce-v1"          // RoCE v1: layer 2 only, no ECN, not routable
	RiskMTUAboveNetdev = "mtu-above-netdev" // the path MTU plus RoCE's headers exceed the netdev's MTU
)

// Risks names what is risky in the settings the event carries, in the
// order the settings are shown.
func (a *QPAttr) Risks() []string {
	var r []string
	if a.Sets(QPMaskTimeout) {
		switch {
		case a.Timeout == 0:
			r = append(r, RiskNoTimeout)
		case a.Timeout >= 24:
			r = append(r, RiskLongTimeout)
		case a.Timeout < 8:
			r = append(r, RiskShortTimeout)
		}
	}
	if a.Sets(QPMaskRetryCnt) && a.RetryCnt == 0 {
		r = append(r, RiskNoRetry)
	}
	if a.Sets(QPMaskRNRRetry) && a.RNRRetry == 7 {
		r = append(r, RiskRNRInfinite)
	}
	if a.Sets(QPMaskMinRNRTimer) && a.MinRNRTimer == 0 {
		r = append(r, RiskRNRWait)
	}
	if a.Sets(QPMaskPathMTU) && a.HasNdev && PathMTUBytes(a.PathMTU) > RoCEPathMTU(a.NdevMTU) {
		r = append(r, RiskMTUAboveNetdev)
	}
	if a.HasGID && a.SGID.Is6() && !a.SGID.Is4In6() && a.SGID.IsLinkLocalUnicast() && a.GIDType == GIDTypeRoCEv2 {
		r = append(r, RiskLinkLocalGID)
	}
	if a.HasGID && a.HasNdev && a.GIDType != GIDTypeRoCEv2 {
		r = append(r, RiskRoCEv1)
	}
	return r
}

// GIDText is a GID as show_gids writes it: IPv6's text, with an
// IPv4-mapped GID's address after it.
func GIDText(g netip.Addr) string {
	if g.Is4In6() {
		return "::ffff:" + g.Unmap().String()
	}
	return g.String()
}

// Words are the settings in words, each "name value[ = meaning]", in the
// order of Risks.
func (a *QPAttr) Words() []string {
	var w []string
	if a.Sets(QPMaskTimeout) {
		if a.Timeout == 0 {
			w = append(w, "timeout 0 = infinite")
		} else {
			w = append(w, "timeout "+strconv.Itoa(int(a.Timeout))+" = "+fmtMS(TimeoutNS(a.Timeout)))
		}
	}
	if a.Sets(QPMaskRetryCnt) {
		w = append(w, "retry_cnt "+strconv.Itoa(int(a.RetryCnt)))
	}
	if a.Sets(QPMaskRNRRetry) {
		s := "rnr_retry " + strconv.Itoa(int(a.RNRRetry))
		if a.RNRRetry == 7 {
			s += " = infinite"
		}
		w = append(w, s)
	}
	if a.Sets(QPMaskMinRNRTimer) {
		w = append(w, "min_rnr_timer "+strconv.Itoa(int(a.MinRNRTimer))+" = "+fmtMS(MinRNRTimerNS(a.MinRNRTimer)))
	}
	if a.Sets(QPMaskPathMTU) {
		s := "path_mtu " + strconv.FormatUint(uint64(PathMTUBytes(a.PathMTU)), 10)
		if a.HasNdev && PathMTUBytes(a.PathMTU) > RoCEPathMTU(a.NdevMTU) {
			s += " > " + strconv.FormatUint(uint64(RoCEPathMTU(a.NdevMTU)), 10) + " for mtu " + strconv.FormatUint(uint64(a.NdevMTU), 10)
		}
		w = append(w, s)
	}
	if a.HasGID {
		s := "sgid " + strconv.Itoa(int(a.SGIDIndex)) + " " + GIDText(a.SGID) + " " + a.GIDType.Name(a.HasNdev)
		if a.HasNdev {
			s += " " + a.Ndev
			if a.HasVLAN {
				s += " vlan " + strconv.Itoa(int(a.VLAN))
			}
			s += " mtu " + strconv.FormatUint(uint64(a.NdevMTU), 10)
		}
		w = append(w, s)
	}
	if a.HasGRH {
		w = append(w, "dgid "+GIDText(a.DGID))
	}
	return w
}

// Merge takes what a later modify set (n) over a QP's settings so far: the
// values its mask carries, and the GID and destination it names.
func (a *QPAttr) Merge(n *QPAttr) {
	if n.Sets(QPMaskTimeout) {
		a.Timeout = n.Timeout
	}
	if n.Sets(QPMaskRetryCnt) {
		a.RetryCnt = n.RetryCnt
	}
	if n.Sets(QPMaskRNRRetry) {
		a.RNRRetry = n.RNRRetry
	}
	if n.Sets(QPMaskMinRNRTimer) {
		a.MinRNRTimer = n.MinRNRTimer
	}
	if n.Sets(QPMaskPathMTU) {
		a.PathMTU = n.PathMTU
	}
	a.Mask |= n.Mask
	if n.HasGID { // the GID the QP sends from, with its netdev, as of this modify
		a.HasGID, a.SGID, a.SGIDIndex, a.GIDType = true, n.SGID, n.SGIDIndex, n.GIDType
		a.HasNdev, a.Ndev, a.NdevMTU, a.NetNS, a.HasVLAN, a.VLAN = n.HasNdev, n.Ndev, n.NdevMTU, n.NetNS, n.HasVLAN, n.VLAN
	}
	if n.HasGRH {
		a.HasGRH, a.DGID = true, n.DGID
	}
}
