package nldev

import (
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// resTable describes how one resource type travels: the command that dumps
// it, the nested table attribute and the entry attribute inside it.
type resTable struct {
	cmd   uint16
	table uint16
	entry uint16
}

var resTables = map[rdma.ResType]resTable{
	rdma.ResQP:   {cmdResQPGet, attrResQP, attrResQPEntry},
	rdma.ResCMID: {cmdResCMIDGet, attrResCMID, attrResCMIDEntry},
	rdma.ResCQ:   {cmdResCQGet, attrResCQ, attrResCQEntry},
	rdma.ResMR:   {cmdResMRGet, attrResMR, attrResMREntry},
	rdma.ResPD:   {cmdResPDGet, attrResPD, attrResPDEntry},
	rdma.ResCTX:  {cmdResCTXGet, attrResCTX, attrResCTXEntry},
	rdma.ResSRQ:  {cmdResSRQGet, attrResSRQ, attrResSRQEntry},
}

// DecodeDevice decodes the attributes of one GET reply.
func DecodeDevice(data []byte) (rdma.Device, error) {
	var d rdma.Device
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return d, fmt.Errorf("device: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			d.Index = ad.Uint32()
		case attrDevName:
			d.Name = ad.String()
		case attrPortIndex:
			d.Ports = ad.Uint32()
		case attrCapFlags:
			d.CapFlags = ad.Uint64()
		case attrFWVersion:
			d.FWVersion = ad.String()
		case attrNodeGUID:
			d.NodeGUID = ad.Uint64()
		case attrSysImageGUID:
			d.SysImageGUID = ad.Uint64()
		case attrDevNodeType:
			d.NodeType = rdma.NodeType(ad.Uint8())
		case attrDevProtocol:
			d.Protocol = ad.String()
		case attrDevDIM:
			on := ad.Uint8() == 1
			d.DIM = &on
		}
	}
	if err := ad.Err(); err != nil {
		return d, fmt.Errorf("device %q: %w", d.Name, err)
	}
	return d, nil
}

// DecodePort decodes the attributes of one PORT_GET reply.
func DecodePort(data []byte) (rdma.Port, error) {
	var p rdma.Port
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return p, fmt.Errorf("port: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			p.DevIndex = ad.Uint32()
		case attrDevName:
			p.DevName = ad.String()
		case attrPortIndex:
			p.Port = ad.Uint32()
		case attrCapFlags:
			p.CapFlags = ad.Uint64()
		case attrSubnetPrefix:
			p.SubnetPrefix = ad.Uint64()
			p.Has |= rdma.HasSubnetPrefix
		case attrLID:
			p.LID = ad.Uint32()
			p.Has |= rdma.HasLID
		case attrSMLID:
			p.SMLID = ad.Uint32()
			p.Has |= rdma.HasSMLID
		case attrLMC:
			p.LMC = ad.Uint8()
			p.Has |= rdma.HasLMC
		case attrPortState:
			p.State = rdma.PortState(ad.Uint8())
		case attrPortPhysState:
			p.PhysState = rdma.PhysState(ad.Uint8())
		case attrNdevIndex:
			p.NetdevIndex = ad.Uint32()
		case attrNdevName:
			p.Netdev = ad.String()
			p.Has |= rdma.HasNetdev
		}
	}
	if err := ad.Err(); err != nil {
		return p, fmt.Errorf("port %s/%d: %w", p.DevName, p.Port, err)
	}
	return p, nil
}

// DecodeSummary decodes one RES_GET reply: a device and its resource counts.
func DecodeSummary(data []byte) (rdma.Summary, error) {
	var s rdma.Summary
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return s, fmt.Errorf("summary: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			s.DevIndex = ad.Uint32()
		case attrDevName:
			s.DevName = ad.String()
		case attrResSummary:
			ad.Nested(func(table *netlink.AttributeDecoder) error {
				for table.Next() {
					if table.Type() != attrResSummaryEntry {
						continue
					}
					table.Nested(func(e *netlink.AttributeDecoder) error {
						var c rdma.Count
						var haveName, haveCurr bool
						for e.Next() {
							switch e.Type() {
							case attrResSummaryEntryName:
								c.Name, haveName = e.String(), true
							case attrResSummaryEntryCurr:
								c.Value, haveCurr = e.Uint64(), true
							}
						}
						if e.Err() == nil && (!haveName || !haveCurr) {
							return errors.New("summary entry without name or count")
						}
						s.Counts = append(s.Counts, c)
						return e.Err()
					})
				}
				return table.Err()
			})
		}
	}
	if err := ad.Err(); err != nil {
		return s, fmt.Errorf("summary of device %q: %w", s.DevName, err)
	}
	return s, nil
}

// DecodeResources decodes one RES_*_GET dump reply of type t: a device and
// a table of entries. An entry that fails to decode is reported in the
// returned error (which names the device, type and entry) and left out; the
// other entries are still returned. withheld says that the caller lacks
// CAP_NET_ADMIN, so missing MR and PD keys were withheld by the kernel.
func DecodeResources(t rdma.ResType, data []byte, withheld bool) ([]rdma.Resource, error) {
	tab, ok := resTables[t]
	if !ok {
		return nil, fmt.Errorf("no netlink dump for resource type %s", t)
	}
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, fmt.Errorf("%s dump: %w", t, err)
	}
	var (
		devIndex uint32
		devName  string
		tables   [][]byte
		out      []rdma.Resource
		errs     []error
	)
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			devIndex = ad.Uint32()
		case attrDevName:
			devName = ad.String()
		case tab.table:
			// The device attributes precede the table in the kernel's
			// messages, but nothing promises it: decode tables last. The
			// slice aliases data, which outlives this call.
			ad.Do(func(b []byte) error { tables = append(tables, b); return nil })
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%s dump of device %q: %w", t, devName, err)
	}
	for _, table := range tables {
		td, err := netlink.NewAttributeDecoder(table)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s table of device %q: %w", t, devName, err))
			continue
		}
		n := 0
		for td.Next() {
			if td.Type() != tab.entry {
				continue
			}
			n++
			out = append(out, rdma.Resource{Type: t, DevIndex: devIndex, DevName: devName})
			r := &out[len(out)-1]
			var err error
			td.Do(func(b []byte) error { err = decodeEntry(r, b); return nil })
			if err != nil {
				out = out[:len(out)-1]
				errs = append(errs, fmt.Errorf("%s entry %d of device %q: %w", t, n, devName, err))
				continue
			}
			if withheld {
				markWithheld(r)
			}
		}
		if err := td.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s table of device %q after entry %d: %w", t, devName, n, err))
		}
	}
	return out, errors.Join(errs...)
}

// markWithheld records the keys that the kernel only sends to CAP_NET_ADMIN.
func markWithheld(r *rdma.Resource) {
	switch r.Type {
	case rdma.ResMR:
		r.Withheld = (rdma.HasRKey | rdma.HasLKey) &^ r.Has
	case rdma.ResPD:
		r.Withheld = rdma.HasLocalDMALKey &^ r.Has
	}
}

// decodeEntry fills r from the attributes of one *_ENTRY. Attributes the
// kernel adds in future versions are ignored, as the kernel's own liberal
// validation does.
func decodeEntry(r *rdma.Resource, data []byte) error {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return err
	}
	for ad.Next() {
		switch ad.Type() {
		case attrPortIndex:
			r.Port = ad.Uint32()
			r.Has |= rdma.HasPort
		case attrResLQPN:
			r.LQPN = ad.Uint32()
			r.Has |= rdma.HasLQPN
		case attrResRQPN:
			r.RQPN = ad.Uint32()
			r.Has |= rdma.HasRQPN
		case attrResRQPSN:
			r.RQPSN = ad.Uint32()
			r.Has |= rdma.HasRQPSN
		case attrResSQPSN:
			r.SQPSN = ad.Uint32()
			r.Has |= rdma.HasSQPSN
		case attrResPathMigState:
			r.PathMig = rdma.PathMigState(ad.Uint8())
			r.Has |= rdma.HasPathMig
		case attrResType:
			// RES_TYPE is the QP type for QPs and CM_IDs, the SRQ type for SRQs.
			v := ad.Uint8()
			if r.Type == rdma.ResSRQ {
				r.SRQType = rdma.SRQType(v)
				r.Has |= rdma.HasSRQType
			} else {
				r.QPType = rdma.QPType(v)
				r.Has |= rdma.HasQPType
			}
		case attrResState:
			v := ad.Uint8()
			if r.Type == rdma.ResCMID {
				r.CMState = rdma.CMState(v)
			} else {
				r.QPState = rdma.QPState(v)
			}
			r.Has |= rdma.HasState
		case attrResPID:
			r.Owner.PID = ad.Uint32()
			r.Has |= rdma.HasPID
		case attrResKernName:
			r.Owner.KernName = ad.String()
		case attrResPS:
			r.PS = rdma.PortSpace(ad.Uint32())
			r.Has |= rdma.HasPS
		case attrResSrcAddr:
			ad.Do(func(b []byte) error {
				var err error
				r.Src, r.SrcZone, err = rdma.DecodeSockaddr(b)
				r.Has |= rdma.HasSrcAddr
				return err
			})
		case attrResDstAddr:
			ad.Do(func(b []byte) error {
				var err error
				r.Dst, r.DstZone, err = rdma.DecodeSockaddr(b)
				r.Has |= rdma.HasDstAddr
				return err
			})
		case attrResCQE:
			r.CQE = ad.Uint32()
			r.Has |= rdma.HasCQE
		case attrResUsecnt:
			r.Users = ad.Uint64()
			r.Has |= rdma.HasUsers
		case attrResPollCtx:
			r.PollCtx = rdma.PollCtx(ad.Uint8())
			r.Has |= rdma.HasPollCtx
		case attrDevDIM:
			r.DIM = ad.Uint8() == 1
			r.Has |= rdma.HasDIM
		case attrResRKey:
			r.RKey = ad.Uint32()
			r.Has |= rdma.HasRKey
		case attrResLKey:
			r.LKey = ad.Uint32()
			r.Has |= rdma.HasLKey
		case attrResIOVA:
			r.IOVA = ad.Uint64()
			r.Has |= rdma.HasIOVA
		case attrResMRLen:
			r.MRLen = ad.Uint64()
			r.Has |= rdma.HasMRLen
		case attrResLocalDMALKey:
			r.LocalDMALKey = ad.Uint32()
			r.Has |= rdma.HasLocalDMALKey
		case attrResUnsafeGlobalRKey:
			r.UnsafeGlobalRKey = ad.Uint32()
			r.Has |= rdma.HasUnsafeGlobalRKey
		case attrResPDN:
			r.PDN = ad.Uint32()
			r.Has |= rdma.HasPDN
		case attrResCQN:
			r.CQN = ad.Uint32()
			r.Has |= rdma.HasCQN
		case attrResMRN:
			r.MRN = ad.Uint32()
			r.Has |= rdma.HasMRN
		case attrResCMIDN:
			r.CMIDN = ad.Uint32()
			r.Has |= rdma.HasCMIDN
		case attrResCTXN:
			r.CTXN = ad.Uint32()
			r.Has |= rdma.HasCTXN
		case attrResSRQN:
			r.SRQN = ad.Uint32()
			r.Has |= rdma.HasSRQN
		case attrResQP:
			// An SRQ lists its QPs as single numbers or ranges.
			ad.Nested(func(qps *netlink.AttributeDecoder) error {
				for qps.Next() {
					if qps.Type() != attrResQPEntry {
						continue
					}
					qps.Nested(func(e *netlink.AttributeDecoder) error {
						var q rdma.QPRange
						for e.Next() {
							switch e.Type() {
							case attrResLQPN:
								q.Min = e.Uint32()
								q.Max = q.Min
							case attrMinRange:
								q.Min = e.Uint32()
							case attrMaxRange:
								q.Max = e.Uint32()
							}
						}
						r.QPs = append(r.QPs, q)
						return e.Err()
					})
				}
				return qps.Err()
			})
		}
	}
	if err := ad.Err(); err != nil {
		return err
	}
	return checkRequired(r)
}

// checkRequired rejects entries without the attributes that every kernel
// since the dump was introduced sends; iproute2 refuses them too.
func checkRequired(r *rdma.Resource) error {
	var need rdma.Field
	var names string
	switch r.Type {
	case rdma.ResQP:
		need, names = rdma.HasLQPN|rdma.HasQPType|rdma.HasState, "lqpn, type and state"
	case rdma.ResCMID:
		need, names = rdma.HasState|rdma.HasPS, "state and port space"
	case rdma.ResCQ:
		need, names = rdma.HasCQE|rdma.HasUsers, "cqe and users"
	case rdma.ResMR:
		need, names = rdma.HasMRLen, "mrlen"
	case rdma.ResPD:
		need, names = rdma.HasUsers, "users"
	case rdma.ResCTX:
		need, names = rdma.HasCTXN, "ctxn"
	case rdma.ResSRQ:
		need, names = rdma.HasSRQN, "srqn"
	}
	if r.Has&need != need {
		return fmt.Errorf("expected attributes %s, some are missing", names)
	}
	return nil
}
