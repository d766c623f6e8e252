package tracer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

func TestRecordLayoutMatchesTheCStruct(t *testing.T) {
	var e bpf.RdmatraceEvent
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"ts", unsafe.Offsetof(e.Ts), offTS},
		{"cgroup", unsafe.Offsetof(e.Cgroup), offCgroup},
		{"obj", unsafe.Offsetof(e.Obj), offObj},
		{"kind", unsafe.Offsetof(e.Kind), offKind},
		{"flags", unsafe.Offsetof(e.Flags), offFlags},
		{"dev_index", unsafe.Offsetof(e.DevIndex), offDevIndex},
		{"port", unsafe.Offsetof(e.Port), offPort},
		{"id", unsafe.Offsetof(e.Id), offID},
		{"qpn", unsafe.Offsetof(e.Qpn), offQPN},
		{"owner_pid", unsafe.Offsetof(e.OwnerPid), offOwnerPID},
		{"owner_tid", unsafe.Offsetof(e.OwnerTid), offOwnerTID},
		{"actor_pid", unsafe.Offsetof(e.ActorPid), offActorPID},
		{"actor_tid", unsafe.Offsetof(e.ActorTid), offActorTID},
		{"cm_event", unsafe.Offsetof(e.CmEvent), offCMEvent},
		{"status", unsafe.Offsetof(e.Status), offStatus},
		{"ps", unsafe.Offsetof(e.Ps), offPS},
		{"cm_tp", unsafe.Offsetof(e.CmTp), offCMTP},
		{"res_type", unsafe.Offsetof(e.ResType), offResType},
		{"qp_type", unsafe.Offsetof(e.QpType), offQPType},
		{"old_state", unsafe.Offsetof(e.OldState), offOldState},
		{"new_state", unsafe.Offsetof(e.NewState), offNewState},
		{"suppressed", unsafe.Offsetof(e.Suppressed), offSuppress},
		{"dev_name", unsafe.Offsetof(e.DevName), offDevName},
		{"owner_comm", unsafe.Offsetof(e.OwnerComm), offOwnComm},
		{"kern_name", unsafe.Offsetof(e.KernName), offKernName},
		{"actor_comm", unsafe.Offsetof(e.ActorComm), offActComm},
		{"owner_cgroup", unsafe.Offsetof(e.OwnerCgroup), offOwnerCg},
		{"src", unsafe.Offsetof(e.Src), offSrc},
		{"dst", unsafe.Offsetof(e.Dst), offDst},
		{"dur", unsafe.Offsetof(e.Dur), offDur},
		{"size", unsafe.Offsetof(e.Size), offSize},
		{"wait", unsafe.Offsetof(e.Wait), offWait},
		{"func", unsafe.Offsetof(e.Func), offFunc},
		{"next_pid", unsafe.Offsetof(e.NextPid), offNextPID},
		{"next_comm", unsafe.Offsetof(e.NextComm), offNextComm},
		{"sizeof", unsafe.Sizeof(e), recordSize},
	} {
		if f.got != f.want {
			t.Errorf("struct event field %s at %d, the decoder reads it at %d", f.name, f.got, f.want)
		}
	}
}

func readRecording(t testing.TB, dir string) (Clock, [][]byte) {
	f, err := os.Open(filepath.Join(dir, "trace.raw"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clock, recs, err := ReadRaw(f)
	if err != nil {
		t.Fatal(err)
	}
	return clock, recs
}

// TestDecodeMatchesTheLiveStream decodes raw records recorded in the guest
// (6.1 and 6.12, an rping pair and a device added and removed) and checks
// that they render exactly as `rdmatrace trace -j` printed them live.
func TestDecodeMatchesTheLiveStream(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC // the human view prints local time
	dirs, _ := filepath.Glob("../testdata/tracer/*")
	if len(dirs) < 2 {
		t.Fatalf("recordings for %d kernels, want 6.1 and 6.12", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			clock, recs := readRecording(t, dir)
			live, err := os.ReadFile(filepath.Join(dir, "trace.ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			sc := bufio.NewScanner(bytes.NewReader(live))
			for sc.Scan() {
				if !strings.Contains(sc.Text(), `"event":"exists"`) { // from the netlink snapshot
					want = append(want, sc.Text())
				}
			}
			d := NewDecoder(clock)
			var ev rdma.Event
			var human bytes.Buffer
			kinds := map[rdma.EventKind]int{}
			for i, rec := range recs {
				if err := d.Decode(rec, &ev); err != nil {
					t.Fatalf("record %d: %v", i+1, err)
				}
				kinds[ev.Kind]++
				got := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
				if i >= len(want) || got != want[i] {
					t.Fatalf("record %d decodes to\n  %s\nlive stream had\n  %s", i+1, got, want[min(i, len(want)-1)])
				}
				human.WriteString(formats.EventLine(&ev) + "\n")
			}
			if len(recs) != len(want) {
				t.Errorf("%d records, %d live lines", len(recs), len(want))
			}
			for _, k := range []rdma.EventKind{rdma.EvCreate, rdma.EvDestroy, rdma.EvModify, rdma.EvCMIDCreate,
				rdma.EvCMEventHandler, rdma.EvCMIDAttach, rdma.EvDevRegister, rdma.EvDevUnregister} {
				if kinds[k] == 0 {
					t.Errorf("the recording has no %s event", k)
				}
			}
			golden.Check(t, filepath.Join(dir, "trace.txt"), human.Bytes())
		})
	}
}

func TestDecodeRejectsShortAndUnknownRecords(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := d.Decode(make([]byte, 10), &ev); err == nil {
		t.Error("a 10-byte record decoded")
	}
	rec := make([]byte, recordSize)
	rec[offKind] = 99
	if err := d.Decode(rec, &ev); err == nil || !strings.Contains(err.Error(), "unknown kind 99") {
		t.Errorf("unknown kind: %v", err)
	}
	rec[offKind] = byte(cCM)
	rec[offCMTP] = 200
	if err := d.Decode(rec, &ev); err == nil || !strings.Contains(err.Error(), "unknown tracepoint 200") {
		t.Errorf("unknown tracepoint: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(make([]byte, recordSize))
	f.Add(spanRecord(cSpan))
	f.Add(spanRecord(cOffCPU))
	f.Add(portRecord(1))
	f.Add(portRecord(3))
	f.Fuzz(func(t *testing.T, rec []byte) {
		d := NewDecoder(Clock{})
		var ev rdma.Event
		if d.Decode(rec, &ev) == nil {
			_ = formats.AppendJSON(nil, formats.EventObject(&ev))
			_ = formats.EventLine(&ev)
		}
	})
}

// TestDecodeOwnerCgroup: the owner's cgroup id reaches the event and -j as
// cgroup-id; a record recorded before the field existed still decodes.
func TestDecodeOwnerCgroup(t *testing.T) {
	d := NewDecoder(Clock{})
	rec := make([]byte, recordSize)
	rec[offKind] = byte(cResAdd)
	rec[offFlags] = byte(cfHasOwner | cfUser)
	binary.LittleEndian.PutUint32(rec[offOwnerPID:], 300)
	binary.LittleEndian.PutUint32(rec[offOwnerTID:], 300)
	binary.LittleEndian.PutUint64(rec[offOwnerCg:], 4242)
	var ev rdma.Event
	if err := d.Decode(rec, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.OwnerCgroup != 4242 {
		t.Errorf("OwnerCgroup = %d, want 4242", ev.OwnerCgroup)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); !strings.Contains(j, `"cgroup-id":4242`) {
		t.Errorf("-j lacks cgroup-id 4242: %s", j)
	}
	if err := d.Decode(rec[:oldRecordSize], &ev); err != nil || ev.OwnerCgroup != 0 || ev.Owner.PID != 300 {
		t.Errorf("a record of the old size: %v, OwnerCgroup %d, owner %d", err, ev.OwnerCgroup, ev.Owner.PID)
	}
}

// spanRecord is a span (ib_umem_get, 1 MiB) or an off-CPU spell record.
func spanRecord(kind bpf.RdmatraceEventKind) []byte {
	rec := make([]byte, recordSize)
	le := binary.LittleEndian
	le.PutUint64(rec[offTS:], 1000)
	le.PutUint32(rec[offKind:], uint32(kind))
	le.PutUint32(rec[offFlags:], uint32(cfHasSize|cfPreempted|cfHasOwner))
	le.PutUint32(rec[offActorPID:], 7)
	copy(rec[offActComm:], "noise")
	copy(rec[offOwnComm:], "rdmabench")
	le.PutUint64(rec[offDur:], 2500)
	le.PutUint64(rec[offSize:], 1<<20)
	le.PutUint32(rec[offFunc:], 6)
	le.PutUint32(rec[offNextPID:], 42)
	copy(rec[offNextComm:], "hog")
	return rec
}

func TestSpansAndSpellsDecodeWithoutAllocating(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	for _, kind := range []bpf.RdmatraceEventKind{cSpan, cOffCPU} {
		rec := spanRecord(kind)
		if err := d.Decode(rec, &ev); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = d.Decode(rec, &ev) }); n != 0 {
			t.Errorf("kind %d: %v allocations per record", kind, n)
		}
	}
	if ev.Kind != rdma.EvOffCPU || ev.Dur != 2500 || ev.Next.Comm != "hog" || ev.Next.TID != 42 || !ev.Has(rdma.EvPreempted) {
		t.Errorf("off-cpu decoded as %+v", ev)
	}
	_ = d.Decode(spanRecord(cSpan), &ev)
	if ev.Kind != rdma.EvSpan || ev.Func != "ib_umem_get" || ev.Size != 1<<20 || ev.Owner.PID != 7 {
		t.Errorf("span decoded as %+v", ev)
	}
	if err := d.Decode(spanRecord(cSpan)[:offDur], &ev); err == nil {
		t.Error("a span record cut at the old size decoded")
	}
}

// portRecord is an rdma_listen that got EADDRINUSE on siw0 (op 1) or a
// process's bind (op 3), with the address as sockaddr_in.
func portRecord(op uint32) []byte {
	rec := make([]byte, recordSize)
	le := binary.LittleEndian
	le.PutUint32(rec[offKind:], uint32(cPortBusy))
	flags := uint32(cfHasOwner | cfHasAddr)
	if op == 1 {
		flags |= uint32(cfHasDev)
		copy(rec[offDevName:], "siw0")
		le.PutUint32(rec[offID:], 5)
	}
	le.PutUint32(rec[offFlags:], flags)
	le.PutUint32(rec[offOwnerPID:], 221)
	le.PutUint32(rec[offOwnerTID:], 221)
	copy(rec[offOwnComm:], "rping")
	le.PutUint32(rec[offStatus:], uint32(0xffffff9e)) // -98
	le.PutUint32(rec[offPS:], 0x106)
	rec[offSrc] = 2 // AF_INET, 10.99.1.1:7410
	binary.BigEndian.PutUint16(rec[offSrc+2:], 7410)
	copy(rec[offSrc+4:], []byte{10, 99, 1, 1})
	le.PutUint32(rec[offFunc:], op)
	return rec
}

// A port-busy record decodes to its function, address, status and, for
// rdma_cm, the cm_id; -j and the line say EADDRINUSE and the holders the
// CLI found. An SMC fallback decodes to its reason and the socket's inode.
func TestDecodePortBusyAndSMCFallback(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := d.Decode(portRecord(1), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != rdma.EvPortBusy || ev.Func != "rdma_listen" || ev.Type != rdma.ResCMID || ev.ID != 5 || ev.Status != -98 ||
		ev.Src.String() != "10.99.1.1:7410" || ev.DevName != "siw0" {
		t.Errorf("rdma_listen port-busy decoded as %+v", ev)
	}
	ev.Holders = []string{"python3[300] tcp LISTEN 0.0.0.0:7410"}
	j := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
	if !strings.Contains(j, `"func":"rdma_listen"`) || !strings.Contains(j, `"status":-98,"status-name":"EADDRINUSE","holders":["python3[300] tcp LISTEN 0.0.0.0:7410"]`) {
		t.Errorf("-j: %s", j)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "rdma_listen EADDRINUSE, held by python3[300] tcp LISTEN 0.0.0.0:7410") {
		t.Errorf("line: %s", l)
	}
	if err := d.Decode(portRecord(3), &ev); err != nil || ev.Func != "bind" || ev.Has(rdma.EvHasRes) || ev.Owner.PID != 221 || ev.Suppressed != 0 {
		t.Errorf("bind port-busy: %v, %+v", err, ev)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); strings.Contains(j, "suppressed") {
		t.Errorf("-j of a port-busy event that follows none held back: %s", j)
	}
	// The rate limit's count of like events held back before this one.
	held := portRecord(3)
	binary.LittleEndian.PutUint32(held[offSuppress:], 21917)
	if err := d.Decode(held, &ev); err != nil || ev.Suppressed != 21917 {
		t.Errorf("bind port-busy with a held-back count: %v, %+v", err, ev)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); !strings.Contains(j, `"status-name":"EADDRINUSE","suppressed":21917`) {
		t.Errorf("-j of a port-busy event after 21917 held back: %s", j)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "bind EADDRINUSE (after 21917 like it held back)") {
		t.Errorf("line: %s", l)
	}
	if err := d.Decode(portRecord(9), &ev); err == nil || !strings.Contains(err.Error(), "unknown operation 9") {
		t.Errorf("unknown operation: %v", err)
	}
	rec := portRecord(1)
	binary.LittleEndian.PutUint32(rec[offKind:], uint32(cSMCFallback))
	binary.LittleEndian.PutUint32(rec[offStatus:], 0x03030000)
	binary.LittleEndian.PutUint32(rec[offID:], 12936)
	if err := d.Decode(rec, &ev); err != nil || ev.Kind != rdma.EvSMCFallback || ev.Inode != 12936 {
		t.Fatalf("smc-fallback: %v, %+v", err, ev)
	}
	j = string(formats.AppendJSON(nil, formats.EventObject(&ev)))
	if !strings.Contains(j, `"fallback":50528256,"fallback-reason":"0x03030000 (no SMC device found (R or D))","inode":12936`) {
		t.Errorf("smc-fallback -j: %s", j)
	}
}

// An SMC-R link record decodes to its QP, device port, link group (the id
// as smc-tools print it, the role) and link; -j and the line carry them,
// and trace -j's line reads back (replay) to the same event.
func TestDecodeSMCLink(t *testing.T) {
	rec := make([]byte, recordSize)
	le := binary.LittleEndian
	le.PutUint32(rec[offKind:], uint32(cSMCLinkCreate))
	le.PutUint32(rec[offFlags:], uint32(cfHasDev|cfHasQP))
	copy(rec[offDevName:], "rxe0")
	le.PutUint32(rec[offPort:], 1)
	le.PutUint32(rec[offQPN:], 17)
	rec[offQPType] = 2 // IB_QPT_RC
	le.PutUint32(rec[offID:], 1)
	rec[offNewState] = 2 // SMC_LNK_ACTIVATING
	le.PutUint64(rec[offSize:], 0x100|1<<32)
	le.PutUint32(rec[offActorPID:], 130)
	le.PutUint32(rec[offActorTID:], 130)
	copy(rec[offActComm:], "e2e.test")
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := d.Decode(rec, &ev); err != nil {
		t.Fatal(err)
	}
	want := rdma.SMCLink{LGR: 0x100, Role: "server", ID: 1, State: "activating", HasLGR: true}
	if ev.Kind != rdma.EvSMCLinkCreate || ev.SMC != want || ev.LQPN != 17 || ev.DevName != "rxe0" || ev.Port != 1 || ev.Given(rdma.HasState) {
		t.Fatalf("decoded %+v", ev)
	}
	j := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
	if !strings.Contains(j, `"event":"smc-link-create","ifname":"rxe0","port":1,"lqpn":17,"type":"RC"`) ||
		!strings.Contains(j, `"lgr-id":"00000100","role":"server","link-id":1,"link-state":"activating"`) {
		t.Errorf("-j: %s", j)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "smc-link-create           rxe0/1     -                        lqpn 17 RC lgr 00000100 server link 1 activating") || !strings.Contains(l, "by e2e.test[130]") {
		t.Errorf("line: %s", l)
	}
	var back rdma.Event
	if err := replay.NewReader(strings.NewReader(j+"\n"), "trace.ndjson").Next(&back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != ev.Kind || back.SMC != ev.SMC || back.LQPN != 17 || back.Port != 1 {
		t.Errorf("read back as %+v", back)
	}
	le.PutUint32(rec[offKind:], uint32(cSMCLinkDestroy))
	le.PutUint64(rec[offSize:], 0x200) // a client's group
	if err := d.Decode(rec, &ev); err != nil || ev.Kind != rdma.EvSMCLinkDestroy || ev.SMC.Role != "client" || ev.SMC.LGR != 0x200 {
		t.Errorf("smc-link-destroy: %v, %+v", err, ev)
	}
	le.PutUint64(rec[offSize:], 0) // no link group read
	if err := d.Decode(rec, &ev); err != nil || ev.SMC.HasLGR || strings.Contains(string(formats.AppendJSON(nil, formats.EventObject(&ev))), "lgr-id") {
		t.Errorf("a link without its group: %v, %+v", err, ev)
	}
}
