package nldev

import (
	"testing"

	"github.com/mdlayher/netlink"
)

func hwCounters(ae *netlink.AttributeEncoder, kv ...any) {
	ae.Nested(attrStatHWCounters, func(nae *netlink.AttributeEncoder) error {
		for i := 0; i < len(kv); i += 2 {
			nae.Nested(attrStatHWCounterEntry, func(eae *netlink.AttributeEncoder) error {
				eae.String(attrStatHWCounterName, kv[i].(string))
				eae.Uint64(attrStatHWCounterValue, uint64(kv[i+1].(int)))
				return nil
			})
		}
		return nil
	})
}

func TestDecodePortStats(t *testing.T) {
	b := encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Uint32(attrPortIndex, 1)
		hwCounters(ae, "sent_pkts", 10, "rcvd_pkts", 12, "duplicate_request", 0)
	})
	s, err := DecodePortStats(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.DevName != "rxe0" || s.Port != 1 || len(s.Counters) != 3 || s.Counters[1].Name != "rcvd_pkts" || s.Counters[1].Value != 12 {
		t.Errorf("DecodePortStats = %+v", s)
	}
	if _, err := DecodePortStats(b[:len(b)-3]); err == nil {
		t.Error("a truncated reply was accepted")
	}
}

func TestDecodeQPCounterModeAndCounters(t *testing.T) {
	m, err := DecodeQPCounterMode(encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Uint32(attrPortIndex, 1)
		ae.Uint32(attrStatMode, counterModeAuto)
		ae.Uint32(attrStatAutoModeMask, counterMaskQPType)
	}))
	if err != nil || !m.Auto || !m.ByType || m.ByPID {
		t.Errorf("DecodeQPCounterMode = %+v, %v", m, err)
	}
	cs, err := DecodeQPCounters(encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Nested(attrStatCounter, func(tae *netlink.AttributeEncoder) error {
			tae.Nested(attrStatCounterEntry, func(eae *netlink.AttributeEncoder) error {
				eae.Uint32(attrPortIndex, 1)
				eae.Uint32(attrStatCounterID, 4)
				eae.Uint8(attrResType, 2) // RC
				eae.Uint32(attrResPID, 812)
				hwCounters(eae, "sent_pkts", 5)
				eae.Nested(attrResQP, func(qae *netlink.AttributeEncoder) error {
					for _, n := range []uint32{17, 18} {
						qae.Nested(attrResQPEntry, func(lae *netlink.AttributeEncoder) error {
							lae.Uint32(attrResLQPN, n)
							return nil
						})
					}
					return nil
				})
				return nil
			})
			return nil
		})
	}))
	if err != nil || len(cs) != 1 {
		t.Fatalf("DecodeQPCounters = %+v, %v", cs, err)
	}
	c := cs[0]
	if c.DevName != "rxe0" || c.ID != 4 || c.Owner.PID != 812 || c.QPType.String() != "RC" || len(c.LQPNs) != 2 || c.Counters[0].Value != 5 {
		t.Errorf("counter = %+v", c)
	}
}
