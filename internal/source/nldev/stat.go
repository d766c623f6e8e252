package nldev

import (
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Counter modes and auto-mode criteria (enum rdma_nl_counter_mode, enum
// rdma_nl_counter_mask).
const (
	counterModeAuto   = 1
	counterModeManual = 2
	counterMaskQPType = 1
	counterMaskPID    = 2
)

// PortStats reads each port's counters, one STAT_GET per port as
// `rdma statistic show` does.
func (c *Client) PortStats(ports []rdma.Port) ([]rdma.PortStats, error) {
	var out []rdma.PortStats
	var errs []error
	for _, p := range ports {
		msgs, err := c.request(cmdStatGet, 0, func(ae *netlink.AttributeEncoder) {
			ae.Uint32(attrDevIndex, p.DevIndex)
			ae.Uint32(attrPortIndex, p.Port)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("counters of %s/%d: %w", p.DevName, p.Port, err))
			continue
		}
		for _, m := range msgs {
			s, err := DecodePortStats(m.Data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

// DecodePortStats decodes a STAT_GET reply for a port.
func DecodePortStats(data []byte) (rdma.PortStats, error) {
	var s rdma.PortStats
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return s, fmt.Errorf("port counters: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			s.DevIndex = ad.Uint32()
		case attrDevName:
			s.DevName = ad.String()
		case attrPortIndex:
			s.Port = ad.Uint32()
		case attrStatHWCounters:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				s.Counters = decodeHWCounters(nad)
				return nad.Err()
			})
		}
	}
	if err := ad.Err(); err != nil {
		return s, fmt.Errorf("counters of %s/%d: %w", s.DevName, s.Port, err)
	}
	return s, nil
}

// decodeHWCounters reads STAT_HWCOUNTERS: entries of a name and a value.
func decodeHWCounters(ad *netlink.AttributeDecoder) []rdma.Counter {
	var out []rdma.Counter
	for ad.Next() {
		if ad.Type() != attrStatHWCounterEntry {
			continue
		}
		ad.Nested(func(ead *netlink.AttributeDecoder) error {
			var c rdma.Counter
			var haveName, haveValue bool
			for ead.Next() {
				switch ead.Type() {
				case attrStatHWCounterName:
					c.Name, haveName = ead.String(), true
				case attrStatHWCounterValue:
					c.Value, haveValue = ead.Uint64(), true
				}
			}
			if err := ead.Err(); err != nil {
				return err
			}
			// The kernel sends both (rdma_nl_stat_hwcounter_entry); a
			// counter without a name cannot be shown or exported.
			if !haveName || c.Name == "" || !haveValue {
				return fmt.Errorf("hardware counter entry %d: expected a name and a value", len(out)+1)
			}
			out = append(out, c)
			return nil
		})
	}
	return out
}

// QPCounterModes reads how each port binds QPs to counters.
func (c *Client) QPCounterModes(ports []rdma.Port) ([]rdma.QPCounterMode, error) {
	var out []rdma.QPCounterMode
	var errs []error
	for _, p := range ports {
		msgs, err := c.request(cmdStatGet, 0, func(ae *netlink.AttributeEncoder) {
			ae.Uint32(attrDevIndex, p.DevIndex)
			ae.Uint32(attrPortIndex, p.Port)
			// A mode in the request asks for the mode, not the counters.
			ae.Uint32(attrStatMode, counterModeManual)
			ae.Uint32(attrStatRes, attrResQP)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("QP counter mode of %s/%d: %w", p.DevName, p.Port, err))
			continue
		}
		for _, m := range msgs {
			md, err := DecodeQPCounterMode(m.Data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, md)
		}
	}
	return out, errors.Join(errs...)
}

// DecodeQPCounterMode decodes a STAT_GET reply to a mode request.
func DecodeQPCounterMode(data []byte) (rdma.QPCounterMode, error) {
	var m rdma.QPCounterMode
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return m, fmt.Errorf("QP counter mode: %w", err)
	}
	var mask uint32
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			m.DevIndex = ad.Uint32()
		case attrDevName:
			m.DevName = ad.String()
		case attrPortIndex:
			m.Port = ad.Uint32()
		case attrStatMode:
			m.Auto = ad.Uint32() == counterModeAuto
		case attrStatAutoModeMask:
			mask = ad.Uint32()
		}
	}
	if m.Auto {
		m.ByType, m.ByPID = mask&counterMaskQPType != 0, mask&counterMaskPID != 0
	}
	if err := ad.Err(); err != nil {
		return m, fmt.Errorf("QP counter mode of %s/%d: %w", m.DevName, m.Port, err)
	}
	return m, nil
}

// QPCounters lists the counters bound to QPs on each port.
func (c *Client) QPCounters(ports []rdma.Port) ([]rdma.QPCounter, error) {
	var out []rdma.QPCounter
	var errs []error
	for _, p := range ports {
		msgs, err := c.request(cmdStatGet, netlink.Dump, func(ae *netlink.AttributeEncoder) {
			ae.Uint32(attrDevIndex, p.DevIndex)
			ae.Uint32(attrPortIndex, p.Port)
			ae.Uint32(attrStatRes, attrResQP)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("QP counters of %s/%d: %w", p.DevName, p.Port, err))
			continue
		}
		for _, m := range msgs {
			cs, err := DecodeQPCounters(m.Data)
			out = append(out, cs...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return out, errors.Join(errs...)
}

// DecodeQPCounters decodes one STAT_GET dump message: a device's counters
// bound to QPs, each with its QPs.
func DecodeQPCounters(data []byte) ([]rdma.QPCounter, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, fmt.Errorf("QP counters: %w", err)
	}
	var (
		idx     uint32
		name    string
		out     []rdma.QPCounter
		entries []error // an entry that fails is left out, named here
		n       int
	)
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			idx = ad.Uint32()
		case attrDevName:
			name = ad.String()
		case attrStatCounter:
			ad.Nested(func(tad *netlink.AttributeDecoder) error {
				for tad.Next() {
					if tad.Type() != attrStatCounterEntry {
						continue
					}
					n++
					var qc rdma.QPCounter
					var err error
					// Do, not Nested: one bad entry must not end the table.
					tad.Do(func(b []byte) error {
						ead, e := netlink.NewAttributeDecoder(b)
						if e == nil {
							e = decodeQPCounter(ead, &qc)
						}
						err = e
						return nil
					})
					if err != nil {
						entries = append(entries, fmt.Errorf("counter entry %d: %w", n, err))
						continue
					}
					out = append(out, qc)
				}
				return tad.Err()
			})
		}
	}
	for i := range out {
		out[i].DevIndex, out[i].DevName = idx, name
	}
	if err := errors.Join(append(entries, ad.Err())...); err != nil {
		return out, fmt.Errorf("QP counters of %s: %w", name, err)
	}
	return out, nil
}

// decodeQPCounter fills qc from one STAT_COUNTER_ENTRY; its error is the
// entry's.
func decodeQPCounter(ad *netlink.AttributeDecoder, qc *rdma.QPCounter) error {
	for ad.Next() {
		switch ad.Type() {
		case attrPortIndex:
			qc.Port = ad.Uint32()
		case attrStatCounterID:
			qc.ID = ad.Uint32()
		case attrResType:
			qc.QPType, qc.HasType = rdma.QPType(ad.Uint8()), true
		case attrResPID:
			qc.Owner.PID = ad.Uint32()
			qc.Owner.TID = qc.Owner.PID
		case attrResKernName:
			qc.Owner.KernName = ad.String()
		case attrStatHWCounters:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				qc.Counters = decodeHWCounters(nad)
				return nad.Err()
			})
		case attrResQP:
			ad.Nested(func(qad *netlink.AttributeDecoder) error {
				for qad.Next() {
					if qad.Type() != attrResQPEntry {
						continue
					}
					qad.Nested(func(lad *netlink.AttributeDecoder) error {
						for lad.Next() {
							if lad.Type() == attrResLQPN {
								qc.LQPNs = append(qc.LQPNs, lad.Uint32())
							}
						}
						return lad.Err()
					})
				}
				return qad.Err()
			})
		}
	}
	return ad.Err()
}
