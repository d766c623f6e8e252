package smcnl

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mdlayher/netlink"
)

// LinkGroup is one SMC-R link group: the RDMA connection(s) between two
// hosts that SMC sockets share.
type LinkGroup struct {
	ID        uint32
	Role      string // client or server: who created it
	Type      string // single, symmetric, asymmetric-peer, asymmetric-local, none
	PNetID    string
	VLAN      uint8
	Conns     uint32 // SMC connections on it
	NetCookie uint64 // the network namespace's cookie (0 before Linux 5.14)
	V2        *V2    // SMC-Rv2 only
	Links     []Link
}

// V2 is what an SMC-Rv2 link group negotiated.
type V2 struct {
	Version, Release, OS uint8
	NegotiatedEID        string
	PeerHost             string
}

// Link is one link of a link group: a QP pair between two RDMA ports.
type Link struct {
	ID           uint8
	Dev          string
	Port         uint8
	GID, PeerGID string
	Conns        uint32
	NetDev       uint32 // ifindex of the port's netdev, 0 when SMC does not know it
	UID, PeerUID string // the link's 4-byte ids, in hex
	State        string // unused, inactive, activating, active
}

// Device is one RDMA device as SMC-R sees it.
type Device struct {
	Name     string
	Links    uint32 // SMC links on the device
	Critical bool   // a link group has its only link on it
	PCIID    string
	Ports    []DevicePort
}

// DevicePort is one port of a Device.
type DevicePort struct {
	Port       uint8 // 1-based
	PNetID     string
	PNetByUser bool // set with the pnet table (smc_pnet), not by firmware
	NetDev     uint32
	Active     bool
	Valid      bool
	Links      uint32
}

// Attribute numbers (linux/smc.h).
const (
	genLgrSMCR  = 2
	genLinkSMCR = 3
	genDevSMCR  = 6

	lgrID, lgrRole, lgrType, lgrPNetID, lgrVLAN, lgrConns, lgrV2Common, lgrNetCookie = 1, 2, 3, 4, 5, 6, 7, 9
	v2Ver, v2Rel, v2OS, v2NegEID, v2PeerHost                                         = 0, 1, 2, 3, 4

	linkID, linkDev, linkPort, linkGID, linkPeerGID, linkConns, linkNetDev, linkUID, linkPeerUID, linkState = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10

	devUseCnt, devIsCrit, devPCIID, devPort, devPort2, devIBName          = 1, 2, 7, 8, 9, 10
	portPNetUsr, portPNetID, portNetDev, portState, portValid, portLnkCnt = 1, 2, 3, 4, 5, 6
)

var (
	roles      = []string{"client", "server"}
	lgrTypes   = []string{"none", "single", "symmetric", "asymmetric-peer", "asymmetric-local"}
	linkStates = []string{"unused", "inactive", "activating", "active"}
)

func name(names []string, v uint8) string {
	if int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}

// pnetID drops the blanks a PNET ID, an EID or a host name is padded with
// to its full length (16, 32 and 32 bytes).
func pnetID(s string) string { return strings.TrimRight(s, " \x00") }

// uid is a link id as the kernel holds it: 4 bytes, put as a native u32.
func uid(v uint32) string {
	var b [4]byte
	ne.PutUint32(b[:], v)
	return hex.EncodeToString(b[:])
}

// top returns the nested attributes of a dump message (a genlmsghdr, then
// attributes) and the type of its first attribute.
func top(msg []byte) (uint16, []byte, error) {
	if len(msg) < genlHdrLen {
		return 0, nil, fmt.Errorf("message of %d bytes, shorter than its generic netlink header (%d)", len(msg), genlHdrLen)
	}
	ad, err := netlink.NewAttributeDecoder(msg[genlHdrLen:])
	if err != nil {
		return 0, nil, err
	}
	if !ad.Next() {
		if err := ad.Err(); err != nil {
			return 0, nil, err
		}
		return 0, nil, errors.New("message without attributes")
	}
	return ad.Type(), ad.Bytes(), nil
}

// DecodeLinkGroups reads a GET_LINK_SMCR dump: each link group's message
// followed by one message for each of its links. A message that cannot be
// read is an error naming it; the others are still returned.
func DecodeLinkGroups(msgs [][]byte) ([]LinkGroup, error) {
	var out []LinkGroup
	var errs []error
	for i, m := range msgs {
		typ, b, err := top(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("message %d of the link group dump: %w", i+1, err))
			continue
		}
		switch typ {
		case genLgrSMCR:
			g, err := decodeLinkGroup(b)
			if err != nil {
				errs = append(errs, fmt.Errorf("message %d of the link group dump (link group %08x): %w", i+1, g.ID, err))
			}
			out = append(out, g)
		case genLinkSMCR:
			l, err := decodeLink(b)
			if err != nil {
				errs = append(errs, fmt.Errorf("message %d of the link group dump (link %d): %w", i+1, l.ID, err))
			}
			if len(out) == 0 {
				errs = append(errs, fmt.Errorf("message %d of the link group dump: link %d on %s before any link group", i+1, l.ID, l.Dev))
				continue
			}
			g := &out[len(out)-1]
			g.Links = append(g.Links, l)
		default:
			errs = append(errs, fmt.Errorf("message %d of the link group dump: attribute %d, want a link group (%d) or a link (%d)", i+1, typ, genLgrSMCR, genLinkSMCR))
		}
	}
	return out, errors.Join(errs...)
}

func decodeLinkGroup(b []byte) (LinkGroup, error) {
	var g LinkGroup
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return g, err
	}
	for ad.Next() {
		switch ad.Type() {
		case lgrID:
			g.ID = ad.Uint32()
		case lgrRole:
			g.Role = name(roles, ad.Uint8())
		case lgrType:
			g.Type = name(lgrTypes, ad.Uint8())
		case lgrPNetID:
			g.PNetID = pnetID(ad.String())
		case lgrVLAN:
			g.VLAN = ad.Uint8()
		case lgrConns:
			g.Conns = ad.Uint32()
		case lgrNetCookie:
			g.NetCookie = ad.Uint64()
		case lgrV2Common:
			v2 := &V2{}
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case v2Ver:
						v2.Version = nd.Uint8()
					case v2Rel:
						v2.Release = nd.Uint8()
					case v2OS:
						v2.OS = nd.Uint8()
					case v2NegEID:
						v2.NegotiatedEID = pnetID(nd.String())
					case v2PeerHost:
						v2.PeerHost = pnetID(nd.String())
					}
				}
				return nd.Err()
			})
			g.V2 = v2
		}
	}
	return g, ad.Err()
}

func decodeLink(b []byte) (Link, error) {
	var l Link
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return l, err
	}
	for ad.Next() {
		switch ad.Type() {
		case linkID:
			l.ID = ad.Uint8()
		case linkDev:
			l.Dev = ad.String()
		case linkPort:
			l.Port = ad.Uint8()
		case linkGID:
			l.GID = ad.String()
		case linkPeerGID:
			l.PeerGID = ad.String()
		case linkConns:
			l.Conns = ad.Uint32()
		case linkNetDev:
			l.NetDev = ad.Uint32()
		case linkUID:
			l.UID = uid(ad.Uint32())
		case linkPeerUID:
			l.PeerUID = uid(ad.Uint32())
		case linkState:
			l.State = name(linkStates, uint8(min(ad.Uint32(), 255)))
		}
	}
	return l, ad.Err()
}

// DecodeDevices reads a GET_DEV_SMCR dump: one message per device. A
// message that cannot be read is left out and named in the error; the
// others are still returned.
func DecodeDevices(msgs [][]byte) ([]Device, error) {
	var out []Device
	var errs []error
	for i, m := range msgs {
		typ, b, err := top(m)
		if err == nil && typ != genDevSMCR {
			err = fmt.Errorf("attribute %d, want a device (%d)", typ, genDevSMCR)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("message %d of the device dump: %w", i+1, err))
			continue
		}
		d, err := decodeDevice(b)
		if err != nil {
			// Left out: a device half read would be shown as it is not.
			errs = append(errs, fmt.Errorf("message %d of the device dump (%q): %w", i+1, d.Name, err))
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

func decodeDevice(b []byte) (Device, error) {
	var d Device
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return d, err
	}
	for ad.Next() {
		switch t := ad.Type(); t {
		case devUseCnt:
			d.Links = ad.Uint32()
		case devIsCrit:
			d.Critical = ad.Uint8() != 0
		case devPCIID:
			d.PCIID = ad.String()
		case devIBName:
			d.Name = ad.String()
		case devPort, devPort2:
			p := DevicePort{Port: uint8(t-devPort) + 1}
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case portPNetUsr:
						p.PNetByUser = nd.Uint8() != 0
					case portPNetID:
						p.PNetID = pnetID(nd.String())
					case portNetDev:
						p.NetDev = nd.Uint32()
					case portState:
						p.Active = nd.Uint8() != 0
					case portValid:
						p.Valid = nd.Uint8() != 0
					case portLnkCnt:
						p.Links = nd.Uint32()
					}
				}
				return nd.Err()
			})
			d.Ports = append(d.Ports, p)
		}
	}
	return d, ad.Err()
}
