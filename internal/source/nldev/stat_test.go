package nldev

import (
	"strings"
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

// A counter entry that does not decode is left out and named, as a bad
// resource entry is; the entries after it are still read. Found by
// FuzzDecodeQPCounters: the bad entry came back half-read beside the
// error, and the client showed it.
func TestDecodeQPCountersLeavesOutABadEntryAndNamesIt(t *testing.T) {
	entry := func(id uint32, pid func(*netlink.AttributeEncoder)) func(*netlink.AttributeEncoder) {
		return func(eae *netlink.AttributeEncoder) {
			eae.Uint32(attrPortIndex, 1)
			eae.Uint32(attrStatCounterID, id)
			pid(eae)
		}
	}
	good := func(e *netlink.AttributeEncoder) { e.Uint32(attrResPID, 812) }
	short := func(e *netlink.AttributeEncoder) { e.Uint16(attrResPID, 812) } // not a u32
	cs, err := DecodeQPCounters(encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Nested(attrStatCounter, func(tae *netlink.AttributeEncoder) error {
			for _, e := range []func(*netlink.AttributeEncoder){entry(4, good), entry(5, short), entry(6, good)} {
				tae.Nested(attrStatCounterEntry, func(eae *netlink.AttributeEncoder) error { e(eae); return nil })
			}
			return nil
		})
	}))
	if len(cs) != 2 || cs[0].ID != 4 || cs[1].ID != 6 || cs[1].Owner.PID != 812 || cs[1].DevName != "rxe0" {
		t.Errorf("decoded %+v, want counters 4 and 6", cs)
	}
	if err == nil || !strings.Contains(err.Error(), "QP counters of rxe0: counter entry 2: netlink: attribute 28 is not a uint32") {
		t.Errorf("error %v, want entry 2 named", err)
	}
}

// The kernel sends a name and a value in each hardware counter entry; one
// without is an error, as a summary entry without is, not a nameless
// counter in the output.
func TestDecodePortStatsRejectsACounterWithoutAName(t *testing.T) {
	for name, fill := range map[string]func(*netlink.AttributeEncoder){
		"no name":  func(e *netlink.AttributeEncoder) { e.Uint64(attrStatHWCounterValue, 3) },
		"no value": func(e *netlink.AttributeEncoder) { e.String(attrStatHWCounterName, "sent_pkts") },
	} {
		s, err := DecodePortStats(encode(t, func(ae *netlink.AttributeEncoder) {
			ae.String(attrDevName, "rxe0")
			ae.Uint32(attrPortIndex, 1)
			ae.Nested(attrStatHWCounters, func(n *netlink.AttributeEncoder) error {
				n.Nested(attrStatHWCounterEntry, func(e *netlink.AttributeEncoder) error {
					e.String(attrStatHWCounterName, "rcvd_pkts")
					e.Uint64(attrStatHWCounterValue, 1)
					return nil
				})
				n.Nested(attrStatHWCounterEntry, func(e *netlink.AttributeEncoder) error { fill(e); return nil })
				return nil
			})
		}))
		if err == nil || !strings.Contains(err.Error(), "counters of rxe0/1: hardware counter entry 2: expected a name and a value") {
			t.Errorf("%s: decoded %+v, error %v; want entry 2 named", name, s, err)
		}
	}
}
