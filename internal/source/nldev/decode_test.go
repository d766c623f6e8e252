package nldev

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// encode builds attribute bytes, failing the test on error.
func encode(t testing.TB, fn func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Address families of struct __kernel_sockaddr_storage.
const (
	afINET  = 2
	afINET6 = 10
)

func sockaddrIn(ip string, port uint16) []byte {
	b := make([]byte, 128)
	binary.NativeEndian.PutUint16(b, afINET)
	binary.BigEndian.PutUint16(b[2:], port)
	a := netip.MustParseAddr(ip).As4()
	copy(b[4:], a[:])
	return b
}

func sockaddrIn6(ip string, port uint16, scope uint32) []byte {
	b := make([]byte, 128)
	binary.NativeEndian.PutUint16(b, afINET6)
	binary.BigEndian.PutUint16(b[2:], port)
	a := netip.MustParseAddr(ip).As16()
	copy(b[8:], a[:])
	binary.NativeEndian.PutUint32(b[24:], scope)
	return b
}

// dump wraps entries in a RES_*_GET reply for device rxe0 (index 1).
func dump(t testing.TB, tab resTable, entries ...func(ae *netlink.AttributeEncoder)) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Nested(tab.table, func(nae *netlink.AttributeEncoder) error {
			for _, e := range entries {
				nae.Nested(tab.entry, func(ee *netlink.AttributeEncoder) error { e(ee); return nil })
			}
			return nil
		})
	})
}

func TestDecodeQPEntries(t *testing.T) {
	data := dump(t, resTables[rdma.ResQP],
		func(e *netlink.AttributeEncoder) {
			e.Uint32(attrPortIndex, 1)
			e.Uint32(attrResLQPN, 1)
			e.String(attrResKernName, "ib_core")
			e.Uint32(attrResSQPSN, 38)
			e.Uint8(attrResType, 1)
			e.Uint8(attrResState, 3)
		},
		func(e *netlink.AttributeEncoder) {
			e.Uint32(attrPortIndex, 1)
			e.Uint32(attrResLQPN, 17)
			e.Uint32(attrResPDN, 25)
			e.Uint32(attrResPID, 6433)
			e.Uint32(attrResRQPN, 18)
			e.Uint32(attrResRQPSN, 100)
			e.Uint32(attrResSQPSN, 200)
			e.Uint8(attrResPathMigState, 0)
			e.Uint8(attrResType, 2)
			e.Uint8(attrResState, 3)
			e.Uint32(999, 7) // an attribute from a future kernel
		})
	rs, err := DecodeResources(rdma.ResQP, data, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("decoded %d QPs, want 2", len(rs))
	}
	gsi, rc := rs[0], rs[1]
	if gsi.DevName != "rxe0" || gsi.DevIndex != 1 || gsi.LQPN != 1 || gsi.QPType != rdma.QPTypeGSI ||
		gsi.QPState != rdma.QPStateRTS || gsi.Owner.KernName != "ib_core" || gsi.Has&rdma.HasPID != 0 || gsi.Has&rdma.HasRQPN != 0 {
		t.Errorf("GSI QP decoded as %+v", gsi)
	}
	if rc.LQPN != 17 || rc.RQPN != 18 || rc.PDN != 25 || rc.Owner.PID != 6433 || rc.Owner.Kernel() ||
		rc.RQPSN != 100 || rc.SQPSN != 200 || rc.QPType != rdma.QPTypeRC || rc.Has&rdma.HasPathMig == 0 {
		t.Errorf("RC QP decoded as %+v", rc)
	}
}

func TestDecodeCMIDAddresses(t *testing.T) {
	data := dump(t, resTables[rdma.ResCMID],
		func(e *netlink.AttributeEncoder) {
			e.Uint32(attrPortIndex, 1)
			e.Uint32(attrResPS, 0x106)
			e.Uint8(attrResState, 8)
			e.Bytes(attrResSrcAddr, sockaddrIn("10.99.0.1", 7174))
			e.Bytes(attrResDstAddr, sockaddrIn("0.0.0.0", 0))
			e.Uint32(attrResCMIDN, 22)
			e.Uint32(attrResPID, 6429)
		},
		func(e *netlink.AttributeEncoder) {
			e.Uint32(attrResLQPN, 31)
			e.Uint8(attrResType, 2)
			e.Uint32(attrResPS, 0x13F)
			e.Uint8(attrResState, 5)
			e.Bytes(attrResSrcAddr, sockaddrIn6("fe80::1", 52459, 3))
			e.Uint32(attrResCMIDN, 23)
		})
	rs, err := DecodeResources(rdma.ResCMID, data, false)
	if err != nil {
		t.Fatal(err)
	}
	l, c := rs[0], rs[1]
	if l.Src != netip.MustParseAddrPort("10.99.0.1:7174") || l.Dst.Port() != 0 || l.CMState != rdma.CMListen || l.PS != rdma.PSTCP || l.CMIDN != 22 {
		t.Errorf("listener decoded as %+v", l)
	}
	if c.Src != netip.MustParseAddrPort("[fe80::1]:52459") || c.SrcZone != "3" || c.Has&rdma.HasDstAddr != 0 ||
		c.PS.String() != "IB" || c.CMState != rdma.CMConnect || c.LQPN != 31 || c.Has&rdma.HasPort != 0 {
		t.Errorf("connecting id decoded as %+v", c)
	}
}

func TestDecodeKeepsGoodEntriesAndNamesBadOnes(t *testing.T) {
	data := dump(t, resTables[rdma.ResMR],
		func(e *netlink.AttributeEncoder) { e.Uint64(attrResMRLen, 4096); e.Uint32(attrResMRN, 1) },
		func(e *netlink.AttributeEncoder) { e.Uint16(attrResMRN, 2) }, // wrong width
		func(e *netlink.AttributeEncoder) { e.Uint32(attrResMRN, 3) }, // no mrlen
		func(e *netlink.AttributeEncoder) { e.Uint64(attrResMRLen, 64); e.Uint32(attrResMRN, 4) })
	rs, err := DecodeResources(rdma.ResMR, data, true)
	if len(rs) != 2 || rs[0].MRN != 1 || rs[1].MRN != 4 {
		t.Fatalf("decoded %+v, want MRs 1 and 4", rs)
	}
	if rs[0].Withheld != rdma.HasRKey|rdma.HasLKey {
		t.Errorf("keys not marked withheld without CAP_NET_ADMIN: %v", rs[0].Withheld)
	}
	if err == nil {
		t.Fatal("no error for the malformed entries")
	}
	for _, want := range []string{`mr entry 2 of device "rxe0"`, "not a uint32", `mr entry 3 of device "rxe0"`, "mrlen"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestDecodeTruncatedTableIsAnError(t *testing.T) {
	data := dump(t, resTables[rdma.ResPD], func(e *netlink.AttributeEncoder) { e.Uint64(attrResUsecnt, 1) })
	const tableStart = 8 + 12 // DEV_INDEX (8 bytes) and DEV_NAME "rxe0\0" (12 bytes, aligned)
	if rs, err := DecodeResources(rdma.ResPD, data, false); err != nil || len(rs) != 1 {
		t.Fatalf("whole message: %v, %v", rs, err)
	}
	for cut := tableStart + 1; cut < len(data); cut++ {
		rs, err := DecodeResources(rdma.ResPD, data[:cut], false)
		if err == nil {
			t.Errorf("cut at byte %d of %d: decoded %d entries and no error", cut, len(data), len(rs))
		}
	}
}

func TestDecodeSummaryAndDevice(t *testing.T) {
	s, err := DecodeSummary(encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 0)
		ae.String(attrDevName, "rxe_lo")
		ae.Nested(attrResSummary, func(n *netlink.AttributeEncoder) error {
			for _, kv := range []struct {
				k string
				v uint64
			}{{"pd", 1}, {"cq", 1}, {"qp", 1}} {
				n.Nested(attrResSummaryEntry, func(e *netlink.AttributeEncoder) error {
					e.String(attrResSummaryEntryName, kv.k)
					e.Uint64(attrResSummaryEntryCurr, kv.v)
					return nil
				})
			}
			return nil
		})
	}))
	if err != nil || s.DevName != "rxe_lo" || len(s.Counts) != 3 || s.Counts[2] != (rdma.Count{Name: "qp", Value: 1}) {
		t.Errorf("summary = %+v, %v", s, err)
	}
	d, err := DecodeDevice(encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, 2)
		ae.String(attrDevName, "rxe0")
		ae.Uint32(attrPortIndex, 1)
		ae.Uint64(attrNodeGUID, 0x1122334455667788)
		ae.Uint8(attrDevNodeType, 1)
		ae.String(attrDevProtocol, "roce")
		ae.Uint8(attrDevDIM, 0)
	}))
	if err != nil || d.Index != 2 || d.Ports != 1 || d.NodeGUID != 0x1122334455667788 || d.Protocol != "roce" || d.DIM == nil || *d.DIM {
		t.Errorf("device = %+v, %v", d, err)
	}
}

func TestSortByPortKeepsKernelOrderWithinAPort(t *testing.T) {
	mk := func(id uint32, port uint32) rdma.Resource {
		r := rdma.Resource{Type: rdma.ResQP, LQPN: id}
		if port > 0 {
			r.Port, r.Has = port, rdma.HasPort
		}
		return r
	}
	rs := []rdma.Resource{mk(1, 1), mk(2, 0), mk(3, 2), mk(4, 1), mk(5, 0)}
	SortByPort(rs)
	var got []uint32
	for _, r := range rs {
		got = append(got, r.LQPN)
	}
	want := []uint32{2, 5, 1, 4, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func FuzzDecodeResources(f *testing.F) {
	f.Add(uint8(2), dump(f, resTables[rdma.ResQP], func(e *netlink.AttributeEncoder) { e.Uint32(attrResLQPN, 1) }))
	f.Add(uint8(3), dump(f, resTables[rdma.ResCMID], func(e *netlink.AttributeEncoder) { e.Bytes(attrResSrcAddr, sockaddrIn6("::1", 1, 1)) }))
	f.Add(uint8(7), dump(f, resTables[rdma.ResSRQ], func(e *netlink.AttributeEncoder) {
		e.Nested(attrResQP, func(n *netlink.AttributeEncoder) error {
			n.Nested(attrResQPEntry, func(q *netlink.AttributeEncoder) error {
				q.Uint32(attrMinRange, 1)
				q.Uint32(attrMaxRange, 4)
				return nil
			})
			return nil
		})
	}))
	f.Add(uint8(0), encode(f, func(ae *netlink.AttributeEncoder) {
		ae.String(attrDevName, "rxe0")
		ae.Nested(attrStatHWCounters, func(n *netlink.AttributeEncoder) error {
			n.Nested(attrStatHWCounterEntry, func(e *netlink.AttributeEncoder) error {
				e.String(attrStatHWCounterName, "sent_pkts")
				e.Uint64(attrStatHWCounterValue, 1)
				return nil
			})
			return nil
		})
	}))
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		t0 := rdma.ResType(typ % 8)
		if _, ok := resTables[t0]; !ok {
			return
		}
		rs, _ := DecodeResources(t0, data, typ&0x80 != 0)
		for _, r := range rs {
			if r.Type != t0 {
				t.Fatalf("decoded a %s from a %s dump", r.Type, t0)
			}
		}
		_, _ = DecodeDevice(data)
		_, _ = DecodePort(data)
		_, _ = DecodeSummary(data)
		// The replies of system and stat: the same attribute bytes.
		_, _ = DecodeSystem(data)
		_, _ = DecodePortStats(data)
		_, _ = DecodeQPCounterMode(data)
		_, _ = DecodeQPCounters(data)
	})
}

// A dual-port device with its QPs alternating between ports: the worst case
// of the insertion sort SortByPort once was (20 k entries took 1.2 s, 100 k
// half a minute). A stable O(n log n) sort takes milliseconds; the bound
// leaves two orders of magnitude for a loaded machine.
func TestSortByPortIsNotQuadratic(t *testing.T) {
	const n = 100000
	rs := make([]rdma.Resource, n)
	for i := range rs {
		rs[i].LQPN = uint32(i)
		rs[i].Port, rs[i].Has = uint32(2-i%2), rdma.HasPort
	}
	start := time.Now()
	SortByPort(rs)
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("SortByPort of %d alternating entries took %v", n, el)
	}
	for i := 1; i < n; i++ {
		a, b := &rs[i-1], &rs[i]
		if a.Port > b.Port || a.Port == b.Port && a.LQPN > b.LQPN {
			t.Fatalf("entries %d and %d out of order: port %d lqpn %d before port %d lqpn %d", i-1, i, a.Port, a.LQPN, b.Port, b.LQPN)
		}
	}
}

func BenchmarkSortByPortAlternating(b *testing.B) {
	src := make([]rdma.Resource, 20000)
	for i := range src {
		src[i].Port, src[i].Has = uint32(2-i%2), rdma.HasPort
	}
	rs := make([]rdma.Resource, len(src))
	for b.Loop() {
		copy(rs, src)
		SortByPort(rs)
	}
}
