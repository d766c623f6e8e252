package nldev

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The fuzz targets below hold the reply decoders to properties, not only to
// "no panic": what decodes without an error re-encodes (with the encoders
// here, which send only what a presence bit says was sent) to bytes that
// decode to the same value, so no field is set without its presence bit;
// every error names the reply it was reading. The seeds are the replies
// recorded from the 6.1 and 6.12 kernels in testdata/netlink.

// recordings returns every recorded reply file, keyed by path.
func recordings(f *testing.F) map[string][]byte {
	f.Helper()
	files, err := filepath.Glob("../../../testdata/netlink/*/netlink/*/*.nl")
	if err != nil || len(files) == 0 {
		f.Fatalf("no netlink recordings in ../testdata/netlink (%v)", err)
	}
	out := map[string][]byte{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out[p] = b
	}
	return out
}

// addRecordedPayloads seeds f with the payload of every recorded reply,
// then with the payloads of extra.
func addRecordedPayloads(f *testing.F, extra ...[]byte) {
	for p, b := range recordings(f) {
		msgs, err := UnmarshalMessages(b)
		if err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		for _, m := range msgs {
			f.Add(m.Data)
		}
	}
	for _, b := range extra {
		f.Add(b)
	}
}

// wantErrPrefix fails t unless err starts with what the decoder was reading.
func wantErrPrefix(t *testing.T, err error, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		if strings.HasPrefix(err.Error(), p) {
			return
		}
	}
	t.Fatalf("error %q does not start with any of %q", err, prefixes)
}

func encodeDevice(t testing.TB, d rdma.Device) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, d.Index)
		ae.String(attrDevName, d.Name)
		ae.Uint32(attrPortIndex, d.Ports)
		ae.Uint64(attrCapFlags, d.CapFlags)
		ae.String(attrFWVersion, d.FWVersion)
		ae.Uint64(attrNodeGUID, d.NodeGUID)
		ae.Uint64(attrSysImageGUID, d.SysImageGUID)
		ae.Uint8(attrDevNodeType, uint8(d.NodeType))
		ae.String(attrDevProtocol, d.Protocol)
		if d.DIM != nil {
			ae.Uint8(attrDevDIM, map[bool]uint8{true: 1}[*d.DIM])
		}
	})
}

func FuzzDecodeDevice(f *testing.F) {
	on := true
	addRecordedPayloads(f, encodeDevice(f, rdma.Device{Index: 3, Name: "mlx5_0", Ports: 1, FWVersion: "16.35.2000", DIM: &on}))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDevice(data)
		if err != nil {
			wantErrPrefix(t, err, "device")
			return
		}
		again, err := DecodeDevice(encodeDevice(t, d))
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", d, again, err)
		}
	})
}

// portHas are the presence bits DecodePort sets.
const portHas = rdma.HasSubnetPrefix | rdma.HasLID | rdma.HasSMLID | rdma.HasLMC | rdma.HasNetdev

func encodePort(t testing.TB, p rdma.Port) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, p.DevIndex)
		ae.String(attrDevName, p.DevName)
		ae.Uint32(attrPortIndex, p.Port)
		ae.Uint64(attrCapFlags, p.CapFlags)
		if p.Has&rdma.HasSubnetPrefix != 0 {
			ae.Uint64(attrSubnetPrefix, p.SubnetPrefix)
		}
		if p.Has&rdma.HasLID != 0 {
			ae.Uint32(attrLID, p.LID)
		}
		if p.Has&rdma.HasSMLID != 0 {
			ae.Uint32(attrSMLID, p.SMLID)
		}
		if p.Has&rdma.HasLMC != 0 {
			ae.Uint8(attrLMC, p.LMC)
		}
		ae.Uint8(attrPortState, uint8(p.State))
		ae.Uint8(attrPortPhysState, uint8(p.PhysState))
		ae.Uint32(attrNdevIndex, p.NetdevIndex)
		if p.Has&rdma.HasNetdev != 0 {
			ae.String(attrNdevName, p.Netdev)
		}
	})
}

func FuzzDecodePort(f *testing.F) {
	addRecordedPayloads(f,
		encodePort(f, rdma.Port{DevIndex: 1, DevName: "rxe0", Port: 1, State: 4, PhysState: 5, NetdevIndex: 2, Netdev: "eth0", Has: rdma.HasNetdev}),
		encodePort(f, rdma.Port{DevIndex: 2, DevName: "mlx5_0", Port: 1, LID: 7, SMLID: 1, LMC: 0, SubnetPrefix: 0xfe80 << 48,
			Has: rdma.HasLID | rdma.HasSMLID | rdma.HasLMC | rdma.HasSubnetPrefix}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePort(data)
		if err != nil {
			wantErrPrefix(t, err, "port")
			return
		}
		if p.Has&^portHas != 0 {
			t.Fatalf("port has presence bits %v beyond %v", p.Has, portHas)
		}
		again, err := DecodePort(encodePort(t, p))
		if err != nil || again != p {
			t.Fatalf("decoded %+v; re-encoded with what its presence bits say, it decodes to %+v, %v", p, again, err)
		}
	})
}

func encodeSummary(t testing.TB, s rdma.Summary) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, s.DevIndex)
		ae.String(attrDevName, s.DevName)
		ae.Nested(attrResSummary, func(n *netlink.AttributeEncoder) error {
			for _, c := range s.Counts {
				n.Nested(attrResSummaryEntry, func(e *netlink.AttributeEncoder) error {
					e.String(attrResSummaryEntryName, c.Name)
					e.Uint64(attrResSummaryEntryCurr, c.Value)
					return nil
				})
			}
			return nil
		})
	})
}

func FuzzDecodeSummary(f *testing.F) {
	addRecordedPayloads(f, encodeSummary(f, rdma.Summary{DevName: "rxe0", Counts: []rdma.Count{{Name: "pd", Value: 1}, {Name: "qp", Value: 3}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSummary(data)
		if err != nil {
			wantErrPrefix(t, err, "summary")
			return
		}
		if len(s.Counts) == 0 {
			s.Counts = nil // an empty table and none decode alike
		}
		again, err := DecodeSummary(encodeSummary(t, s))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", s, again, err)
		}
	})
}

func encodeSystem(t testing.TB, s rdma.System) []byte {
	flag := func(ae *netlink.AttributeEncoder, typ uint16, b *bool) {
		if b != nil {
			ae.Uint8(typ, map[bool]uint8{true: 1}[*b])
		}
	}
	return encode(t, func(ae *netlink.AttributeEncoder) {
		switch s.NetNSMode {
		case "":
		case "exclusive":
			ae.Uint8(attrSysNetNSMode, 0)
		case "shared":
			ae.Uint8(attrSysNetNSMode, 1)
		default:
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(s.NetNSMode, "unknown("), ")"), 10, 8)
			if err != nil {
				t.Fatalf("netns mode %q: %v", s.NetNSMode, err)
			}
			ae.Uint8(attrSysNetNSMode, uint8(n))
		}
		flag(ae, attrSysCopyOnFork, s.CopyOnFork)
		flag(ae, attrSysPrivilegedQKey, s.PrivilegedQKey)
		flag(ae, attrSysMonitorMode, s.Monitor)
	})
}

func FuzzDecodeSystem(f *testing.F) {
	yes, no := true, false
	addRecordedPayloads(f,
		encodeSystem(f, rdma.System{NetNSMode: "shared", CopyOnFork: &yes}),
		encodeSystem(f, rdma.System{NetNSMode: "unknown(7)", CopyOnFork: &yes, PrivilegedQKey: &no, Monitor: &yes}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSystem(data)
		if err != nil {
			wantErrPrefix(t, err, "system")
			return
		}
		again, err := DecodeSystem(encodeSystem(t, s))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", s, again, err)
		}
	})
}

func encodeHWCounters(ae *netlink.AttributeEncoder, cs []rdma.Counter) {
	ae.Nested(attrStatHWCounters, func(n *netlink.AttributeEncoder) error {
		for _, c := range cs {
			n.Nested(attrStatHWCounterEntry, func(e *netlink.AttributeEncoder) error {
				e.String(attrStatHWCounterName, c.Name)
				e.Uint64(attrStatHWCounterValue, c.Value)
				return nil
			})
		}
		return nil
	})
}

func encodePortStats(t testing.TB, s rdma.PortStats) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, s.DevIndex)
		ae.String(attrDevName, s.DevName)
		ae.Uint32(attrPortIndex, s.Port)
		if s.Counters != nil {
			encodeHWCounters(ae, s.Counters)
		}
	})
}

// checkCounters fails t for a counter without a name: the kernel sends a
// name and a value in every entry (rdma_nl_stat_hwcounter_entry).
func checkCounters(t *testing.T, cs []rdma.Counter) {
	t.Helper()
	for i, c := range cs {
		if c.Name == "" {
			t.Fatalf("counter %d of %d has no name: %+v", i+1, len(cs), cs)
		}
	}
}

func FuzzDecodePortStats(f *testing.F) {
	addRecordedPayloads(f, encodePortStats(f, rdma.PortStats{DevIndex: 1, DevName: "rxe0", Port: 1,
		Counters: []rdma.Counter{{Name: "sent_pkts", Value: 10}, {Name: "rcvd_pkts", Value: 12}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodePortStats(data)
		if err != nil {
			wantErrPrefix(t, err, "port counters", "counters of")
			return
		}
		checkCounters(t, s.Counters)
		again, err := DecodePortStats(encodePortStats(t, s))
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", s, again, err)
		}
	})
}

func encodeQPCounterMode(t testing.TB, m rdma.QPCounterMode) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, m.DevIndex)
		ae.String(attrDevName, m.DevName)
		ae.Uint32(attrPortIndex, m.Port)
		mode := uint32(counterModeManual)
		if m.Auto {
			mode = counterModeAuto
		}
		ae.Uint32(attrStatMode, mode)
		var mask uint32
		if m.ByType {
			mask |= counterMaskQPType
		}
		if m.ByPID {
			mask |= counterMaskPID
		}
		ae.Uint32(attrStatAutoModeMask, mask)
	})
}

func FuzzDecodeQPCounterMode(f *testing.F) {
	addRecordedPayloads(f,
		encodeQPCounterMode(f, rdma.QPCounterMode{DevIndex: 1, DevName: "rxe0", Port: 1, Auto: true, ByType: true}),
		encodeQPCounterMode(f, rdma.QPCounterMode{DevIndex: 1, DevName: "rxe0", Port: 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeQPCounterMode(data)
		if err != nil {
			wantErrPrefix(t, err, "QP counter mode")
			return
		}
		if !m.Auto && (m.ByType || m.ByPID) {
			t.Fatalf("manual mode with auto criteria: %+v", m)
		}
		again, err := DecodeQPCounterMode(encodeQPCounterMode(t, m))
		if err != nil || again != m {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", m, again, err)
		}
	})
}

// encodeQPCounterEntry encodes one STAT_COUNTER_ENTRY's attributes.
func encodeQPCounterEntry(e *netlink.AttributeEncoder, c rdma.QPCounter) {
	e.Uint32(attrPortIndex, c.Port)
	e.Uint32(attrStatCounterID, c.ID)
	if c.HasType {
		e.Uint8(attrResType, uint8(c.QPType))
	}
	e.Uint32(attrResPID, c.Owner.PID)
	if c.Owner.KernName != "" {
		e.String(attrResKernName, c.Owner.KernName)
	}
	if c.Counters != nil {
		encodeHWCounters(e, c.Counters)
	}
	if c.LQPNs != nil {
		e.Nested(attrResQP, func(q *netlink.AttributeEncoder) error {
			for _, n := range c.LQPNs {
				q.Nested(attrResQPEntry, func(l *netlink.AttributeEncoder) error { l.Uint32(attrResLQPN, n); return nil })
			}
			return nil
		})
	}
}

func encodeQPCounters(t testing.TB, devIndex uint32, devName string, cs []rdma.QPCounter) []byte {
	return encode(t, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(attrDevIndex, devIndex)
		ae.String(attrDevName, devName)
		ae.Nested(attrStatCounter, func(tab *netlink.AttributeEncoder) error {
			for _, c := range cs {
				tab.Nested(attrStatCounterEntry, func(e *netlink.AttributeEncoder) error { encodeQPCounterEntry(e, c); return nil })
			}
			return nil
		})
	})
}

// counterEntries walks a STAT_GET dump message as the kernel frames it and
// returns each counter entry's bytes; ok is false when the framing itself
// (the message, a table) is broken.
func counterEntries(data []byte) (entries [][]byte, ok bool) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, false
	}
	for ad.Next() {
		switch ad.Type() {
		case attrDevIndex:
			ad.Uint32()
		case attrDevName:
			_ = ad.String()
		}
		if ad.Type() != attrStatCounter {
			continue
		}
		ad.Nested(func(tab *netlink.AttributeDecoder) error {
			for tab.Next() {
				if tab.Type() == attrStatCounterEntry {
					entries = append(entries, tab.Bytes())
				}
			}
			return nil
		})
	}
	// A table that does not parse, or a device attribute, shows in the top
	// decoder's error.
	return entries, ad.Err() == nil
}

func FuzzDecodeQPCounters(f *testing.F) {
	addRecordedPayloads(f, encodeQPCounters(f, 1, "rxe0", []rdma.QPCounter{
		{Port: 1, ID: 4, QPType: 2, HasType: true, Owner: rdma.Owner{PID: 812, TID: 812},
			Counters: []rdma.Counter{{Name: "sent_pkts", Value: 5}}, LQPNs: []uint32{17, 18}},
		{Port: 1, ID: 5, Owner: rdma.Owner{KernName: "ib_core"}},
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := DecodeQPCounters(data)
		if err != nil {
			wantErrPrefix(t, err, "QP counters")
		}
		for _, c := range cs {
			if c.Owner.TID != c.Owner.PID || !c.HasType && c.QPType != 0 {
				t.Fatalf("counter %d is inconsistent: %+v", c.ID, c)
			}
			checkCounters(t, c.Counters)
		}
		// The entries are independent: what the message gives is what its
		// entries give one by one, and an entry that is an error alone is
		// not returned half-read beside the error.
		entries, framed := counterEntries(data)
		if framed {
			var want []rdma.QPCounter
			bad := false
			for _, e := range entries {
				one, err := DecodeQPCounters(encode(t, func(ae *netlink.AttributeEncoder) {
					ae.Nested(attrStatCounter, func(tab *netlink.AttributeEncoder) error {
						tab.Bytes(attrStatCounterEntry, e)
						return nil
					})
				}))
				if err != nil {
					bad = true
					continue
				}
				want = append(want, one...)
			}
			if bad != (err != nil) {
				t.Fatalf("error %v, but an entry alone is an error: %v", err, bad)
			}
			got := make([]rdma.QPCounter, len(cs))
			for i, c := range cs {
				c.DevIndex, c.DevName = 0, ""
				got[i] = c
			}
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %+v, %v; entry by entry %+v", got, err, want)
			}
		}
		if err != nil || len(cs) == 0 {
			return
		}
		again, err := DecodeQPCounters(encodeQPCounters(t, cs[0].DevIndex, cs[0].DevName, cs))
		if err != nil || !reflect.DeepEqual(again, cs) {
			t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", cs, again, err)
		}
	})
}

// dumpTypes are the resource types with a dump, so that every fuzzed byte
// names one.
var dumpTypes = []rdma.ResType{rdma.ResPD, rdma.ResCQ, rdma.ResQP, rdma.ResCMID, rdma.ResMR, rdma.ResCTX, rdma.ResSRQ}

func dumpIndex(t rdma.ResType) uint8 {
	for i, d := range dumpTypes {
		if d == t {
			return uint8(i)
		}
	}
	panic(t)
}

// FuzzDecodeDump walks a multi-part dump reply, a sequence of messages in
// the recording format (nlmsghdr and payload, as the kernel framed them).
// The framing round-trips; the result is each message's entries, none lost
// or made up, in iproute2's order: portless entries first, then by port,
// the kernel's order kept within a port; the error is there exactly when a
// message's is.
func FuzzDecodeDump(f *testing.F) {
	for p, b := range recordings(f) {
		name := filepath.Base(filepath.Dir(p))
		if t, err := rdma.ParseResType(name); err == nil && !strings.HasSuffix(p, "-cmd1.nl") {
			f.Add(dumpIndex(t), false, b)
			f.Add(dumpIndex(t), true, b)
		}
	}
	qp := func(lqpn, port uint32) func(*netlink.AttributeEncoder) {
		return func(e *netlink.AttributeEncoder) {
			if port != 0 {
				e.Uint32(attrPortIndex, port)
			}
			e.Uint32(attrResLQPN, lqpn)
			e.Uint8(attrResType, 2)
			e.Uint8(attrResState, 3)
		}
	}
	var msgs []netlink.Message
	for _, qps := range [][]func(*netlink.AttributeEncoder){{qp(1, 2), qp(2, 1), qp(3, 0)}, {qp(4, 1), qp(5, 2), qp(6, 0)}} {
		data := dump(f, resTables[rdma.ResQP], qps...)
		msgs = append(msgs, netlink.Message{Header: netlink.Header{Length: uint32(16 + len(data))}, Data: data})
	}
	two, err := MarshalMessages(msgs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(dumpIndex(rdma.ResQP), false, two)
	f.Fuzz(func(t *testing.T, typ uint8, withheld bool, rec []byte) {
		rt := dumpTypes[int(typ)%len(dumpTypes)]
		msgs, uerr := UnmarshalMessages(rec)
		if uerr != nil && !strings.HasPrefix(uerr.Error(), "recording: ") {
			t.Fatalf("error %q does not say it reads a recording", uerr)
		}
		back, err := MarshalMessages(msgs)
		if err != nil || !bytes.HasPrefix(rec, back) || uerr == nil && len(back) != len(rec) {
			t.Fatalf("%d messages re-marshal to %d of the %d bytes (%v, %v)", len(msgs), len(back), len(rec), err, uerr)
		}

		rs, err := DecodeDump(rt, msgs, withheld)
		var all []rdma.Resource
		failed := false
		for _, m := range msgs {
			one, err := DecodeResources(rt, m.Data, withheld)
			all = append(all, one...)
			failed = failed || err != nil
		}
		if failed != (err != nil) {
			t.Fatalf("dump error %v; a message alone fails: %v", err, failed)
		}
		if len(rs) != len(all) {
			t.Fatalf("%d entries from the dump, %d from its messages one by one", len(rs), len(all))
		}
		// Stable by port: filtering both by port key gives the same lists.
		byKey := func(rs []rdma.Resource) map[uint64][]rdma.Resource {
			m := map[uint64][]rdma.Resource{}
			for i := range rs {
				k := portKey(&rs[i])
				m[k] = append(m[k], rs[i])
			}
			return m
		}
		if !reflect.DeepEqual(byKey(rs), byKey(all)) {
			t.Fatalf("the dump's entries per port differ from its messages' in kernel order")
		}
		for i := range rs {
			if rs[i].Type != rt {
				t.Fatalf("entry %d is a %s in a %s dump", i, rs[i].Type, rt)
			}
			if i > 0 && portKey(&rs[i-1]) > portKey(&rs[i]) {
				t.Fatalf("entry %d (port key %d) after one with port key %d", i, portKey(&rs[i]), portKey(&rs[i-1]))
			}
		}
	})
}

func TestDumpTypesAreTheTypesWithADump(t *testing.T) {
	if len(dumpTypes) != len(resTables) {
		t.Fatalf("%d dump types for the fuzz target, %d tables", len(dumpTypes), len(resTables))
	}
	for _, d := range dumpTypes {
		if _, ok := resTables[d]; !ok {
			t.Errorf("%s has no dump", d)
		}
	}
}
