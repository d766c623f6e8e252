package tracer

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// qpAttrRecord is a record as bpf/qpattr.h writes it for the modify to RTR
// of a loopback RC QP on rxe0: min_rnr_timer 0, path MTU 4096 over a
// 1500-byte netdev, the fe80:: GID of a VLAN device; then to RTS with
// timeout 0 and rnr_retry 7.
func qpAttrRecords() []bpf.RdmatraceQpAttrEvent {
	var rtr bpf.RdmatraceQpAttrEvent
	rtr.H.Kind = uint32(cQPAttr)
	rtr.H.Flags = uint32(cfHasDev | cfHasQP | cfHasOwner | cfUser)
	rtr.H.OwnerPid, rtr.H.OwnerTid = 812, 812
	rtr.H.ActorPid, rtr.H.ActorTid = 812, 812
	copy(chars(rtr.H.OwnerComm[:]), "qpattr")
	copy(chars(rtr.H.ActorComm[:]), "qpattr")
	copy(chars(rtr.Dev.Name[:]), "rxe0")
	rtr.Dev.Index, rtr.Dev.Port = 1, 1
	rtr.Res.ResType, rtr.Res.Qpn, rtr.Res.QpType, rtr.Res.Id = uint8(rdma.ResQP), 17, 2, 17
	rtr.Mask = uint32(rdma.QPMaskAV | rdma.QPMaskPathMTU | rdma.QPMaskMinRNRTimer | 1) // and IB_QP_STATE
	rtr.MinRnrTimer, rtr.PathMtu = 0, 5
	rtr.QaFlags = uint32(bpf.RdmatraceQpAttrFlagQA_HAS_GID | bpf.RdmatraceQpAttrFlagQA_HAS_NDEV | bpf.RdmatraceQpAttrFlagQA_VLAN | bpf.RdmatraceQpAttrFlagQA_HAS_GRH)
	rtr.Sgid = netip.MustParseAddr("fe80::5054:ff:fe12:3456").As16()
	rtr.Dgid = rtr.Sgid
	rtr.SgidIndex, rtr.GidType = 1, 2
	copy(chars(rtr.Ndev[:]), "eth0.5")
	rtr.NdevMtu, rtr.Vlan, rtr.Netns = 1500, 5, 4026531840
	rts := rtr
	rts.Mask = uint32(rdma.QPMaskTimeout | rdma.QPMaskRetryCnt | rdma.QPMaskRNRRetry | 1)
	rts.Timeout, rts.RetryCnt, rts.RnrRetry = 0, 7, 7
	rts.QaFlags &^= uint32(bpf.RdmatraceQpAttrFlagQA_HAS_GRH)
	// The IPv4-mapped RoCE v1 GID of an address, a sane timeout.
	v1 := rtr
	v1.Mask = uint32(rdma.QPMaskAV | rdma.QPMaskPathMTU | rdma.QPMaskTimeout)
	v1.Timeout, v1.PathMtu = 14, 3
	v1.Sgid = netip.AddrFrom16(netip.MustParseAddr("::ffff:10.99.1.1").As16()).As16()
	v1.SgidIndex, v1.GidType = 2, 1
	v1.QaFlags &^= uint32(bpf.RdmatraceQpAttrFlagQA_VLAN)
	copy(chars(v1.Ndev[:]), "eth0\x00\x00")
	return []bpf.RdmatraceQpAttrEvent{rtr, rts, v1}
}

// TestDecodeQPAttr: a qp-attr record reaches the event, its -j object
// (golden), its human line (golden, the settings in words and the risks),
// and reads back from -j as the same settings.
func TestDecodeQPAttr(t *testing.T) {
	d := NewDecoder(Clock{})
	var lines, js bytes.Buffer
	for i, r := range qpAttrRecords() {
		var ev rdma.Event
		if err := d.Decode(bytesOf(&r), &ev); err != nil {
			t.Fatal(err)
		}
		ev.Time = time.Date(2026, 11, 27, 8, 0, i, 0, time.UTC)
		if ev.Kind != rdma.EvQPAttr || ev.LQPN != 17 || ev.Owner.Comm != "qpattr" {
			t.Fatalf("decoded %+v", ev)
		}
		if ev.QPAttr.Mask&1 != 0 {
			t.Errorf("IB_QP_STATE kept in the settings' mask: %#x", ev.QPAttr.Mask)
		}
		j := formats.AppendJSON(nil, formats.EventObject(&ev))
		js.Write(append(j, '\n'))
		lines.WriteString(strings.TrimSpace(formats.EventText(&ev)) + "\n")
		var back rdma.Event
		if err := replay.NewReader(bytes.NewReader(append(j, '\n')), "trace.ndjson").Next(&back); err != nil {
			t.Fatal(err)
		}
		if !slicesEqual(back.QPAttr.Risks(), ev.QPAttr.Risks()) || !slicesEqual(back.QPAttr.Words(), ev.QPAttr.Words()) {
			t.Errorf("read back as %v %v, was %v %v", back.QPAttr.Words(), back.QPAttr.Risks(), ev.QPAttr.Words(), ev.QPAttr.Risks())
		}
	}
	golden.Check(t, "../testdata/formats/qpattr.ndjson", js.Bytes())
	golden.Check(t, "../testdata/formats/qpattr.txt", lines.Bytes())
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// A qp-attr record of another length is refused, naming the kind.
func TestDecodeQPAttrRefusesAnotherLength(t *testing.T) {
	r := qpAttrRecords()[0]
	var ev rdma.Event
	if err := NewDecoder(Clock{}).Decode(bytesOf(&r)[:qpAttrSize-8], &ev); err == nil || !strings.Contains(err.Error(), "qp-attr record") {
		t.Errorf("a short qp-attr record: %v", err)
	}
}
