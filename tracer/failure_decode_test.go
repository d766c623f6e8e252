package tracer

import (
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// The async and qp-error records start with the header and are as long as
// the object's BTF says.
func TestFailureRecordsMatchTheObject(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name        string
		size, hdrAt uintptr
	}{
		{"async_event", unsafe.Sizeof(bpf.RdmatraceAsyncEvent{}), unsafe.Offsetof(bpf.RdmatraceAsyncEvent{}.H)},
		{"qp_error_event", unsafe.Sizeof(bpf.RdmatraceQpErrorEvent{}), unsafe.Offsetof(bpf.RdmatraceQpErrorEvent{}.H)},
	} {
		var st *btf.Struct
		if err := spec.Types.TypeByName(r.name, &st); err != nil {
			t.Errorf("struct %s: %v", r.name, err)
			continue
		}
		if uintptr(st.Size) != r.size || r.hdrAt != 0 {
			t.Errorf("struct %s: %d bytes in the object, %d in Go, header at %d", r.name, st.Size, r.size, r.hdrAt)
		}
	}
}

// rxePeer is how rxe keeps a RoCEv2 peer: the IPv4-mapped GID.
var rxePeer = [16]uint8{10: 0xff, 11: 0xff, 12: 10, 13: 99, 14: 0, 15: 2}

// A port's event decodes to its device and port, no resource; a user QP's
// to the QP, its owner and its peer. -j, the line and the replay reader
// agree on them.
func TestDecodeAsync(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	var r bpf.RdmatraceAsyncEvent
	r.H.Kind, r.H.Flags = uint32(cAsync), uint32(cfHasDev)
	r.H.ActorPid, r.H.ActorTid = 300, 300
	copy(chars(r.H.ActorComm[:]), "ip")
	copy(chars(r.Dev.Name[:]), "rxe0")
	r.Dev.Index, r.Dev.Port = 1, 1
	r.Res.ResType = noResType
	r.IbEvent = 10 // IB_EVENT_PORT_ERR
	if err := d.Decode(bytesOf(&r), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != rdma.EvAsync || ev.Fault.IBEvent != rdma.IBEventPortErr || ev.Has(rdma.EvHasRes) || !ev.IsPortEvent() ||
		ev.DevName != "rxe0" || ev.Port != 1 || ev.Fault.HasPeer() || ev.Actor.Comm != "ip" {
		t.Fatalf("port event decoded as %+v", ev)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "async                     rxe0/1     -                        PORT_ERR by=ip[300]") {
		t.Errorf("line: %s", l)
	}

	r.H.Flags = uint32(cfHasDev | cfHasOwner | cfHasQP | cfUser | cfHasPeer)
	r.H.OwnerPid, r.H.OwnerTid = 212, 212
	copy(chars(r.H.OwnerComm[:]), "rping")
	r.Res.ResType, r.Res.Id, r.Res.Qpn, r.Res.QpType = uint8(rdma.ResQP), 17, 17, 2
	r.Peer.Gid, r.Peer.Qpn = rxePeer, 18
	r.IbEvent = 1 // IB_EVENT_QP_FATAL
	if err := d.Decode(bytesOf(&r), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != rdma.EvAsync || ev.Fault.IBEvent.String() != "QP_FATAL" || ev.Type != rdma.ResQP || ev.LQPN != 17 || ev.IsPortEvent() ||
		ev.Owner.Comm != "rping" || ev.Fault.PeerGID != netip.MustParseAddr("::ffff:10.99.0.2") || ev.Fault.PeerQPN != 18 {
		t.Fatalf("QP event decoded as %+v", ev)
	}
	j := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
	if !strings.Contains(j, `"ib-event":"QP_FATAL","rgid":"::ffff:10.99.0.2","rqpn":18`) || !strings.Contains(j, `"lqpn":17,"type":"RC","pid":212,"comm":"rping"`) {
		t.Errorf("-j: %s", j)
	}
	var back rdma.Event
	if err := replay.NewReader(strings.NewReader(j+"\n"), "trace.ndjson").Next(&back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != ev.Kind || back.Fault.IBEvent != ev.Fault.IBEvent || back.Fault.PeerGID != ev.Fault.PeerGID || back.LQPN != 17 {
		t.Errorf("read back as %+v", back)
	}
}

// Each of the three QP error records (the driver's ERR, the first error
// completion, the count at destroy) decodes to its report, status and
// count.
func TestDecodeQPError(t *testing.T) {
	d := NewDecoder(Clock{})
	var r bpf.RdmatraceQpErrorEvent
	r.H.Kind, r.H.Flags = uint32(cQPError), uint32(cfHasDev|cfHasOwner|cfHasQP|cfUser|cfHasPeer)
	r.H.OwnerPid, r.H.OwnerTid = 212, 212
	copy(chars(r.H.OwnerComm[:]), "rping")
	copy(chars(r.Dev.Name[:]), "rxe0")
	r.Dev.Port = 1
	r.Res.ResType, r.Res.Id, r.Res.Qpn, r.Res.QpType = uint8(rdma.ResQP), 17, 17, 2
	r.Peer.Gid, r.Peer.Qpn = rxePeer, 18
	for _, tc := range []struct {
		cause  bpf.RdmatraceQpErrorCause
		status uint32
		count  uint64
		report rdma.QPErrorReport
		line   string
	}{
		{bpf.RdmatraceQpErrorCauseQPE_DRIVER_ERR, 0, 0, rdma.QPErrDriver, "lqpn=17 type=RC ERR by its driver peer ::ffff:10.99.0.2 qpn 18"},
		{bpf.RdmatraceQpErrorCauseQPE_FIRST_WC, 12, 1, rdma.QPErrFirst, "first error RETRY_EXC_ERR (transport retry counter exceeded)"},
		{bpf.RdmatraceQpErrorCauseQPE_WC_COUNT, 5, 1234, rdma.QPErrTotal, "1234 WR_FLUSH_ERR in all"},
	} {
		r.Cause, r.WcStatus, r.Count = uint32(tc.cause), tc.status, tc.count
		var ev rdma.Event
		if err := d.Decode(bytesOf(&r), &ev); err != nil {
			t.Fatal(err)
		}
		f := ev.Fault
		if ev.Kind != rdma.EvQPError || f.Report != tc.report || uint32(f.WCStatus) != tc.status || f.Count != tc.count || ev.LQPN != 17 || !f.HasPeer() {
			t.Errorf("cause %d decoded as %+v", tc.cause, ev)
		}
		if l := formats.EventLine(&ev); !strings.Contains(l, tc.line) || !strings.Contains(l, "rping[212]") {
			t.Errorf("cause %d: line %s", tc.cause, l)
		}
	}
}

// Records with a number the decoder has no name for are errors, not
// events with a made-up meaning; so are records of another length.
func TestDecodeRejectsBadFailureRecords(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	var q bpf.RdmatraceQpErrorEvent
	q.H.Kind, q.Cause = uint32(cQPError), 9
	if err := d.Decode(bytesOf(&q), &ev); err == nil || !strings.Contains(err.Error(), "unknown cause 9") {
		t.Errorf("cause 9: %v", err)
	}
	q.Cause, q.WcStatus = 2, 300
	if err := d.Decode(bytesOf(&q), &ev); err == nil || !strings.Contains(err.Error(), "status 300") {
		t.Errorf("status 300: %v", err)
	}
	var a bpf.RdmatraceAsyncEvent
	a.H.Kind, a.IbEvent = uint32(cAsync), 256
	if err := d.Decode(bytesOf(&a), &ev); err == nil || !strings.Contains(err.Error(), "IB event 256") {
		t.Errorf("event 256: %v", err)
	}
	if err := d.Decode(bytesOf(&a)[:asyncSize-8], &ev); err == nil || !strings.Contains(err.Error(), "async record of") {
		t.Errorf("a short async record: %v", err)
	}
	if err := d.Decode(append(bytesOf(&q), 0, 0, 0, 0, 0, 0, 0, 0)[:qpErrorSize+8], &ev); err == nil {
		t.Error("a long qp-error record decoded")
	}
}
