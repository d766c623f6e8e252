package tracer

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// The call-fail and gid records start with the header and are as long as
// the object's BTF says.
func TestCallFailRecordsMatchTheObject(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		size uintptr
	}{
		{"call_fail_event", unsafe.Sizeof(bpf.RdmatraceCallFailEvent{})},
		{"gid_event", unsafe.Sizeof(bpf.RdmatraceGidEvent{})},
	} {
		var st *btf.Struct
		if err := spec.Types.TypeByName(r.name, &st); err != nil {
			t.Errorf("struct %s: %v", r.name, err)
			continue
		}
		if uintptr(st.Size) != r.size {
			t.Errorf("struct %s: %d bytes in the object, %d in Go", r.name, st.Size, r.size)
		}
	}
}

// rxeCaps are rxe's limits as the kernel has them (rxe_param.h).
func rxeCaps(r *bpf.RdmatraceCallFailEvent) {
	r.H.Flags |= uint32(cfHasCaps)
	c := &r.Caps
	c.MaxQpWr, c.MaxSendSge, c.MaxRecvSge, c.MaxCqe = 1048576, 32, 32, 32767
	c.MaxMrSize, c.MaxQp, c.MaxCq, c.MaxMr, c.MaxPd, c.MaxSrq = 1<<64-1, 1<<17, 1<<18, 1<<18, 1<<17, 1<<11
}

// callFailRecords are one record of each way a call fails: the issue's
// cases (a QP's depth over max_qp_wr, a CQ over max_cqe, reg_mr past
// RLIMIT_MEMLOCK, the rdma cgroup's hca_object and hca_handle, an
// unreachable address) and an rdma_cm step whose errno says enough.
func callFailRecords() []bpf.RdmatraceCallFailEvent {
	base := func(op bpf.RdmatraceCallOp, errno int32) bpf.RdmatraceCallFailEvent {
		var r bpf.RdmatraceCallFailEvent
		r.H.Kind, r.H.Flags = uint32(cCallFail), uint32(cfHasDev|cfHasOwner|cfUser)
		r.H.OwnerPid, r.H.OwnerTid, r.H.ActorPid, r.H.ActorTid = 412, 412, 412, 412
		copy(chars(r.H.OwnerComm[:]), "verbs_fail")
		copy(chars(r.H.ActorComm[:]), "verbs_fail")
		copy(chars(r.Dev.Name[:]), "rxe0")
		r.Dev.Index = 1
		r.Op, r.Err = uint32(op), -errno
		return r
	}
	var out []bpf.RdmatraceCallFailEvent
	qp := base(bpf.RdmatraceCallOpCALL_CREATE_QP, 22)
	rxeCaps(&qp)
	qp.Asked.Has = uint8(bpf.RdmatraceAskedFlagASKED_QP)
	qp.Asked.QpType, qp.Asked.MaxSendWr, qp.Asked.MaxRecvWr, qp.Asked.MaxSendSge, qp.Asked.MaxRecvSge = 2, 1048577, 16, 1, 1
	out = append(out, qp)
	sge := qp
	sge.Asked.MaxSendWr, sge.Asked.MaxSendSge = 16, 33
	out = append(out, sge)
	cq := base(bpf.RdmatraceCallOpCALL_CREATE_CQ, 22)
	rxeCaps(&cq)
	cq.Asked.Has, cq.Asked.Cqe = uint8(bpf.RdmatraceAskedFlagASKED_CQE), 32768
	out = append(out, cq)
	mr := base(bpf.RdmatraceCallOpCALL_REG_MR, 12)
	rxeCaps(&mr)
	mr.Asked.Has, mr.Asked.Length, mr.Asked.Access = uint8(bpf.RdmatraceAskedFlagASKED_MR), 1<<20, 7
	mr.Limit, mr.Memlock, mr.Pinned, mr.Npages = uint32(bpf.RdmatraceCallLimitLIMIT_MEMLOCK), 64<<10, 0, 256
	out = append(out, mr)
	cg := base(bpf.RdmatraceCallOpCALL_REG_MR, 11)
	rxeCaps(&cg)
	cg.Limit, cg.RdmacgRes = uint32(bpf.RdmatraceCallLimitLIMIT_RDMACG), 1
	out = append(out, cg)
	ctx := base(bpf.RdmatraceCallOpCALL_GET_CONTEXT, 11)
	rxeCaps(&ctx)
	ctx.Limit, ctx.RdmacgRes = uint32(bpf.RdmatraceCallLimitLIMIT_RDMACG), 0
	out = append(out, ctx)
	ok := base(bpf.RdmatraceCallOpCALL_CREATE_QP, 12)
	rxeCaps(&ok)
	ok.Asked.Has, ok.Asked.QpType, ok.Asked.MaxSendWr, ok.Asked.MaxRecvWr = uint8(bpf.RdmatraceAskedFlagASKED_QP), 2, 64, 64
	out = append(out, ok)
	cm := base(bpf.RdmatraceCallOpCALL_RDMA_RESOLVE_ADDR, 101)
	cm.H.Flags = uint32(cfHasOwner | cfUser | cfHasAddr | cfHasState)
	cm.Res.ResType, cm.Res.NewState = uint8(rdma.ResCMID), 7 // ADDR_BOUND
	cm.Addr.Ps = 0x0106
	putSockaddr4(cm.Addr.Src[:], [4]byte{}, 38211) // rdma_resolve_addr bound it to the wildcard first
	putSockaddr4(cm.Addr.Dst[:], [4]byte{10, 99, 77, 77}, 7174)
	out = append(out, cm)
	bind := base(bpf.RdmatraceCallOpCALL_RDMA_BIND_ADDR, 99)
	bind.H.Flags = uint32(cfHasOwner | cfUser | cfHasAddr | cfHasState)
	bind.Res.ResType, bind.Addr.Ps = uint8(rdma.ResCMID), 0x0106
	putSockaddr4(bind.Addr.Src[:], [4]byte{10, 1, 2, 3}, 7174)
	out = append(out, bind)
	return out
}

func putSockaddr4(b []byte, ip [4]byte, port uint16) {
	binary.LittleEndian.PutUint16(b, 2) // AF_INET
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip[:])
}

func gidRecords() []bpf.RdmatraceGidEvent {
	var a bpf.RdmatraceGidEvent
	a.H.Kind, a.H.Flags = uint32(cGIDChange), uint32(cfHasDev)
	a.H.ActorPid, a.H.ActorTid = 501, 501
	copy(chars(a.H.ActorComm[:]), "ip")
	copy(chars(a.Dev.Name[:]), "rxe0")
	a.Dev.Index, a.Dev.Port = 1, 1
	a.Gid = [16]uint8{10: 0xff, 11: 0xff, 12: 10, 13: 99, 14: 9, 15: 9}
	copy(chars(a.Netdev[:]), "veth-a")
	a.Index, a.GidType, a.Op = 3, 2, 1
	d := a
	d.Op = 2
	return []bpf.RdmatraceGidEvent{a, d}
}

// Each failed call decodes to its call, errno, what it asked, the
// device's limits and the limit that refused it, and its sentence names
// the limit with its numbers; the trace's line and -j say the same, and
// -j reads back to the same sentence. A GID change decodes to its entry.
// The golden holds, per record, the sentence, the line and -j.
func TestDecodeCallFail(t *testing.T) {
	d := NewDecoder(Clock{})
	var out bytes.Buffer
	check := func(rec []byte) {
		var ev rdma.Event
		if err := d.Decode(rec, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == rdma.EvCallFail {
			f, ok := ev.Failure()
			if !ok {
				t.Fatalf("%s: no failure", ev.CallFail.Op)
			}
			out.WriteString(f.What + ": " + f.Why + "\n")
		}
		out.WriteString(strings.TrimSpace(formats.EventLine(&ev)[16:]) + "\n")
		j := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
		out.WriteString(j + "\n\n")
		var back rdma.Event
		if err := replay.NewReader(strings.NewReader(j+"\n"), "trace.ndjson").Next(&back); err != nil {
			t.Fatalf("%s: read back: %v", j, err)
		}
		if a, b := formats.EventText(&back), formats.EventText(&ev); a != b {
			t.Errorf("read back as\n%s\nnot\n%s", a, b)
		}
	}
	for _, r := range callFailRecords() {
		check(bytesOf(&r))
	}
	for _, r := range gidRecords() {
		check(bytesOf(&r))
	}
	golden.Check(t, "../testdata/formats/callfail.txt", out.Bytes())
}

// Records with a call, errno, limit or GID operation the decoder has no
// name for are errors, not events with a made-up meaning.
func TestDecodeRejectsBadCallFailRecords(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	r := callFailRecords()[0]
	r.Op = 20
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "unknown call 20") {
		t.Errorf("call 20: %v", err)
	}
	r.Op, r.Err = 4, 0
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "error 0") {
		t.Errorf("error 0: %v", err)
	}
	r.Err, r.Limit = -22, 3
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "unknown limit 3") {
		t.Errorf("limit 3: %v", err)
	}
	r.Limit, r.RdmacgRes = 1, 2
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "resource 2") {
		t.Errorf("rdmacg resource 2: %v", err)
	}
	g := gidRecords()[0]
	g.Op = 3
	if err := d.Decode(bytesOf(&g), &ev); err == nil || !strings.Contains(err.Error(), "operation 3") {
		t.Errorf("gid op 3: %v", err)
	}
}
