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

	"github.com/cilium/ebpf/btf"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
)

// offKind is where a record's kind is: in the header every record starts with.
const offKind = int(unsafe.Offsetof(bpf.RdmatraceEventHdr{}.Kind))

// TestRecordsMatchTheObject: every record starts with the header, and each
// generated struct is as long as the object's BTF says the C one is: the
// decoder's Go types and the programs' records cannot disagree.
func TestRecordsMatchTheObject(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name        string
		size, hdrAt uintptr
	}{
		{"event_hdr", unsafe.Sizeof(bpf.RdmatraceEventHdr{}), 0},
		{"res_event", unsafe.Sizeof(bpf.RdmatraceResEvent{}), unsafe.Offsetof(bpf.RdmatraceResEvent{}.H)},
		{"dev_event", unsafe.Sizeof(bpf.RdmatraceDevEvent{}), unsafe.Offsetof(bpf.RdmatraceDevEvent{}.H)},
		{"port_busy_event", unsafe.Sizeof(bpf.RdmatracePortBusyEvent{}), unsafe.Offsetof(bpf.RdmatracePortBusyEvent{}.H)},
		{"smc_link_event", unsafe.Sizeof(bpf.RdmatraceSmcLinkEvent{}), unsafe.Offsetof(bpf.RdmatraceSmcLinkEvent{}.H)},
		{"smc_fallback_event", unsafe.Sizeof(bpf.RdmatraceSmcFallbackEvent{}), unsafe.Offsetof(bpf.RdmatraceSmcFallbackEvent{}.H)},
		{"span_event", unsafe.Sizeof(bpf.RdmatraceSpanEvent{}), unsafe.Offsetof(bpf.RdmatraceSpanEvent{}.H)},
		{"off_cpu_event", unsafe.Sizeof(bpf.RdmatraceOffCpuEvent{}), unsafe.Offsetof(bpf.RdmatraceOffCpuEvent{}.H)},
		{"qp_attr_event", unsafe.Sizeof(bpf.RdmatraceQpAttrEvent{}), unsafe.Offsetof(bpf.RdmatraceQpAttrEvent{}.H)},
	} {
		var st *btf.Struct
		if err := spec.Types.TypeByName(r.name, &st); err != nil {
			t.Errorf("struct %s: %v", r.name, err)
			continue
		}
		if uintptr(st.Size) != r.size || r.hdrAt != 0 {
			t.Errorf("struct %s: %d bytes in the object, %d in Go, header at %d", r.name, st.Size, r.size, r.hdrAt)
		}
		t.Logf("struct %s: %d bytes", r.name, r.size)
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
			// The human view as trace prints it: an rdma_cm event a line.
			var human bytes.Buffer
			hw := formats.NewEventWriter(&human, false)
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
				if err := hw.Write(&ev); err != nil {
					t.Fatal(err)
				}
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
			if err := hw.Close(); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(dir, "trace.txt"), human.Bytes())
		})
	}
}

// decodeV1 decodes a record built in version 1's layout, as ReadRaw
// reads an old recording: converted, then decoded.
func decodeV1(d *Decoder, rec []byte, ev *rdma.Event) error {
	conv, err := convertV1(rec)
	if err != nil {
		return err
	}
	return d.Decode(conv, ev)
}

func TestDecodeRejectsShortAndUnknownRecords(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := d.Decode(make([]byte, 10), &ev); err == nil || !strings.Contains(err.Error(), "shorter than the 88-byte header") {
		t.Errorf("a 10-byte record: %v", err)
	}
	var r bpf.RdmatraceResEvent
	r.H.Kind = 99
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "unknown kind 99") {
		t.Errorf("unknown kind: %v", err)
	}
	r.H.Kind, r.CmTp = uint32(cCM), 200
	if err := d.Decode(bytesOf(&r), &ev); err == nil || !strings.Contains(err.Error(), "unknown tracepoint 200") {
		t.Errorf("unknown tracepoint: %v", err)
	}
	// A record of its kind's length and no other: one of another length
	// comes from another program.
	r.CmTp = 1
	if err := d.Decode(bytesOf(&r)[:devSize], &ev); err == nil || !strings.Contains(err.Error(), "resource record of 160 bytes, expected 288") {
		t.Errorf("a short resource record: %v", err)
	}
	if err := d.Decode(append(bytesOf(&r), 0, 0, 0, 0, 0, 0, 0, 0), &ev); err == nil {
		t.Error("a resource record of 8 bytes too many decoded")
	}
	// The single record of version 1 is no record of today.
	old := make([]byte, v1Size328)
	binary.LittleEndian.PutUint32(old[v1Kind:], uint32(cResAdd))
	binary.LittleEndian.PutUint32(old[offKind:], uint32(cResAdd)) // where v1 had dev_index
	if err := d.Decode(old, &ev); err == nil || !strings.Contains(err.Error(), "resource record of 328 bytes, expected 288") {
		t.Errorf("a version 1 record: %v", err)
	}
	if err := decodeV1(d, make([]byte, 10), &ev); err == nil || !strings.Contains(err.Error(), "version 1 record of 10 bytes") {
		t.Errorf("a 10-byte version 1 record: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, v1 := range [][]byte{make([]byte, v1Size328), spanRecord(cSpan), spanRecord(cOffCPU), portRecord(1), portRecord(3)} {
		rec, err := convertV1(v1)
		if err != nil && len(v1) == v1Size328 && binary.LittleEndian.Uint32(v1[v1Kind:]) != 0 {
			f.Fatal(err)
		}
		f.Add(rec)
		f.Add(v1)
	}
	for _, r := range qpAttrRecords() {
		f.Add(append([]byte(nil), bytesOf(&r)...))
	}
	var a bpf.RdmatraceAsyncEvent
	a.H.Kind, a.H.Flags, a.Res.ResType, a.IbEvent = uint32(cAsync), uint32(cfHasPeer|cfHasQP), uint8(rdma.ResQP), 1
	var q bpf.RdmatraceQpErrorEvent
	q.H.Kind, q.H.Flags, q.Cause, q.WcStatus, q.Count = uint32(cQPError), uint32(cfHasPeer|cfHasDev), 3, 5, 7
	f.Add(bytesOf(&a))
	f.Add(bytesOf(&q))
	for _, r := range callFailRecords() {
		f.Add(append([]byte(nil), bytesOf(&r)...))
	}
	for _, r := range gidRecords() {
		f.Add(append([]byte(nil), bytesOf(&r)...))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		d := NewDecoder(Clock{})
		var ev rdma.Event
		if d.Decode(rec, &ev) == nil {
			_ = formats.AppendJSON(nil, formats.EventObject(&ev))
			_ = formats.EventLine(&ev)
		}
		if decodeV1(d, rec, &ev) == nil {
			_ = formats.AppendJSON(nil, formats.EventObject(&ev))
		}
	})
}

// TestDecodeOwnerCgroup: the owner's cgroup id reaches the event and -j as
// cgroup-id; a record recorded before the field existed still decodes.
func TestDecodeOwnerCgroup(t *testing.T) {
	d := NewDecoder(Clock{})
	rec := make([]byte, v1Size328)
	rec[v1Kind] = byte(cResAdd)
	rec[v1Flags] = byte(cfHasOwner | cfUser)
	binary.LittleEndian.PutUint32(rec[v1OwnerPID:], 300)
	binary.LittleEndian.PutUint32(rec[v1OwnerTID:], 300)
	binary.LittleEndian.PutUint64(rec[v1OwnerCg:], 4242)
	var ev rdma.Event
	if err := decodeV1(d, rec, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.OwnerCgroup != 4242 {
		t.Errorf("OwnerCgroup = %d, want 4242", ev.OwnerCgroup)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); !strings.Contains(j, `"cgroup-id":4242`) {
		t.Errorf("-j lacks cgroup-id 4242: %s", j)
	}
	if err := decodeV1(d, rec[:v1Short], &ev); err != nil || ev.OwnerCgroup != 0 || ev.Owner.PID != 300 {
		t.Errorf("a record of the old size: %v, OwnerCgroup %d, owner %d", err, ev.OwnerCgroup, ev.Owner.PID)
	}
}

// spanRecord is a span (ib_umem_get, 1 MiB) or an off-CPU spell record.
func spanRecord(kind bpf.RdmatraceEventKind) []byte {
	rec := make([]byte, v1Size328)
	le := binary.LittleEndian
	le.PutUint64(rec[v1TS:], 1000)
	le.PutUint32(rec[v1Kind:], uint32(kind))
	le.PutUint32(rec[v1Flags:], uint32(cfHasSize|cfPreempted|cfHasOwner))
	le.PutUint32(rec[v1ActorPID:], 7)
	copy(rec[v1ActComm:], "noise")
	copy(rec[v1OwnComm:], "rdmabench")
	le.PutUint64(rec[v1Dur:], 2500)
	le.PutUint64(rec[v1Size:], 1<<20)
	le.PutUint32(rec[v1Func:], 6)
	le.PutUint32(rec[v1NextPID:], 42)
	copy(rec[v1NextComm:], "hog")
	return rec
}

func TestSpansAndSpellsDecodeWithoutAllocating(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	for _, kind := range []bpf.RdmatraceEventKind{cSpan, cOffCPU} {
		rec, err := convertV1(spanRecord(kind))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(rec, &ev); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = d.Decode(rec, &ev) }); n != 0 {
			t.Errorf("kind %d: %v allocations per record", kind, n)
		}
	}
	if ev.Kind != rdma.EvOffCPU || ev.OffCPU.Dur != 2500 || ev.OffCPU.Next.Comm != "hog" || ev.OffCPU.Next.TID != 42 || !ev.Has(rdma.EvPreempted) {
		t.Errorf("off-cpu decoded as %+v", ev)
	}
	_ = decodeV1(d, spanRecord(cSpan), &ev)
	if ev.Kind != rdma.EvSpan || ev.Span.Func != "ib_umem_get" || ev.Span.Dur != 2500 || ev.Size != 1<<20 || ev.Owner.PID != 7 {
		t.Errorf("span decoded as %+v", ev)
	}
	if err := decodeV1(d, spanRecord(cSpan)[:v1Dur], &ev); err == nil {
		t.Error("a span record cut at the old size decoded")
	}
}

// portRecord is an rdma_listen that got EADDRINUSE on siw0 (op 1) or a
// process's bind (op 3), with the address as sockaddr_in.
func portRecord(op uint32) []byte {
	rec := make([]byte, v1Size328)
	le := binary.LittleEndian
	le.PutUint32(rec[v1Kind:], uint32(cPortBusy))
	flags := uint32(cfHasOwner | cfHasAddr)
	if op == 1 {
		flags |= uint32(cfHasDev)
		copy(rec[v1DevName:], "siw0")
		le.PutUint32(rec[v1ID:], 5)
	}
	le.PutUint32(rec[v1Flags:], flags)
	le.PutUint32(rec[v1OwnerPID:], 221)
	le.PutUint32(rec[v1OwnerTID:], 221)
	copy(rec[v1OwnComm:], "rping")
	le.PutUint32(rec[v1Status:], uint32(0xffffff9e)) // -98
	le.PutUint32(rec[v1PS:], 0x106)
	rec[v1Src] = 2 // AF_INET, 10.99.1.1:7410
	binary.BigEndian.PutUint16(rec[v1Src+2:], 7410)
	copy(rec[v1Src+4:], []byte{10, 99, 1, 1})
	le.PutUint32(rec[v1Func:], op)
	return rec
}

// A port-busy record decodes to its function, address, status and, for
// rdma_cm, the cm_id; -j and the line say EADDRINUSE and the holders the
// CLI found. An SMC fallback decodes to its reason and the socket's inode.
func TestDecodePortBusyAndSMCFallback(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := decodeV1(d, portRecord(1), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != rdma.EvPortBusy || ev.PortBusy.Op != "rdma_listen" || ev.Type != rdma.ResCMID || ev.ID != 5 || ev.Status != -98 ||
		ev.Src.String() != "10.99.1.1:7410" || ev.DevName != "siw0" {
		t.Errorf("rdma_listen port-busy decoded as %+v", ev)
	}
	ev.PortBusy.Holders = []string{"python3[300] tcp LISTEN 0.0.0.0:7410"}
	j := string(formats.AppendJSON(nil, formats.EventObject(&ev)))
	if !strings.Contains(j, `"func":"rdma_listen"`) || !strings.Contains(j, `"status":-98,"status-name":"EADDRINUSE","holders":["python3[300] tcp LISTEN 0.0.0.0:7410"]`) {
		t.Errorf("-j: %s", j)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "rdma_listen EADDRINUSE, held by python3[300] tcp LISTEN 0.0.0.0:7410") {
		t.Errorf("line: %s", l)
	}
	if err := decodeV1(d, portRecord(3), &ev); err != nil || ev.PortBusy.Op != "bind" || ev.Has(rdma.EvHasRes) || ev.Owner.PID != 221 || ev.PortBusy.Suppressed != 0 {
		t.Errorf("bind port-busy: %v, %+v", err, ev)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); strings.Contains(j, "suppressed") {
		t.Errorf("-j of a port-busy event that follows none held back: %s", j)
	}
	// The rate limit's count of like events held back before this one.
	held := portRecord(3)
	binary.LittleEndian.PutUint32(held[v1Suppress:], 21917)
	if err := decodeV1(d, held, &ev); err != nil || ev.PortBusy.Suppressed != 21917 {
		t.Errorf("bind port-busy with a held-back count: %v, %+v", err, ev)
	}
	if j := string(formats.AppendJSON(nil, formats.EventObject(&ev))); !strings.Contains(j, `"status-name":"EADDRINUSE","suppressed":21917`) {
		t.Errorf("-j of a port-busy event after 21917 held back: %s", j)
	}
	if l := formats.EventLine(&ev); !strings.Contains(l, "bind EADDRINUSE (after 21917 like it held back)") {
		t.Errorf("line: %s", l)
	}
	if err := decodeV1(d, portRecord(9), &ev); err == nil || !strings.Contains(err.Error(), "unknown operation 9") {
		t.Errorf("unknown operation: %v", err)
	}
	rec := portRecord(1)
	binary.LittleEndian.PutUint32(rec[v1Kind:], uint32(cSMCFallback))
	binary.LittleEndian.PutUint32(rec[v1Status:], 0x03030000)
	binary.LittleEndian.PutUint32(rec[v1ID:], 12936)
	if err := decodeV1(d, rec, &ev); err != nil || ev.Kind != rdma.EvSMCFallback || ev.Inode != 12936 {
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
	rec := make([]byte, v1Size328)
	le := binary.LittleEndian
	le.PutUint32(rec[v1Kind:], uint32(cSMCLinkCreate))
	le.PutUint32(rec[v1Flags:], uint32(cfHasDev|cfHasQP))
	copy(rec[v1DevName:], "rxe0")
	le.PutUint32(rec[v1Port:], 1)
	le.PutUint32(rec[v1QPN:], 17)
	rec[v1QPType] = 2 // IB_QPT_RC
	le.PutUint32(rec[v1ID:], 1)
	rec[v1NewState] = 2 // SMC_LNK_ACTIVATING
	le.PutUint64(rec[v1Size:], 0x100|1<<32)
	le.PutUint32(rec[v1ActorPID:], 130)
	le.PutUint32(rec[v1ActorTID:], 130)
	copy(rec[v1ActComm:], "e2e.test")
	d := NewDecoder(Clock{})
	var ev rdma.Event
	if err := decodeV1(d, rec, &ev); err != nil {
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
	if l := formats.EventLine(&ev); !strings.Contains(l, "smc-link-create           rxe0/1     -                        lqpn=17 type=RC lgr 00000100 server link 1 activating") || !strings.Contains(l, "by=e2e.test[130]") {
		t.Errorf("line: %s", l)
	}
	var back rdma.Event
	if err := replay.NewReader(strings.NewReader(j+"\n"), "trace.ndjson").Next(&back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != ev.Kind || back.SMC != ev.SMC || back.LQPN != 17 || back.Port != 1 {
		t.Errorf("read back as %+v", back)
	}
	le.PutUint32(rec[v1Kind:], uint32(cSMCLinkDestroy))
	le.PutUint64(rec[v1Size:], 0x200) // a client's group
	if err := decodeV1(d, rec, &ev); err != nil || ev.Kind != rdma.EvSMCLinkDestroy || ev.SMC.Role != "client" || ev.SMC.LGR != 0x200 {
		t.Errorf("smc-link-destroy: %v, %+v", err, ev)
	}
	le.PutUint64(rec[v1Size:], 0) // no link group read
	if err := decodeV1(d, rec, &ev); err != nil || ev.SMC.HasLGR || strings.Contains(string(formats.AppendJSON(nil, formats.EventObject(&ev))), "lgr-id") {
		t.Errorf("a link without its group: %v, %+v", err, ev)
	}
}

// The per-kind records say each thing in a field of its own: an SMC link's
// id, state, group and role, and a fallen-back socket's inode whole (the
// single record of old had 32 bits for it, in the restrack id's place).
func TestDecodeSMCRecordsOfTheirOwn(t *testing.T) {
	d := NewDecoder(Clock{})
	var ev rdma.Event
	var l bpf.RdmatraceSmcLinkEvent
	l.H.Kind, l.H.Flags = uint32(cSMCLinkDown), uint32(cfHasDev|cfHasQP)
	copy(chars(l.Dev.Name[:]), "rxe1")
	l.Dev.Port, l.Qpn, l.QpType = 1, 19, 2
	l.LinkId, l.LinkState, l.LgrId, l.Role = 3, 3, 0x300, 1
	if err := d.Decode(bytesOf(&l), &ev); err != nil {
		t.Fatal(err)
	}
	want := rdma.SMCLink{LGR: 0x300, Role: "server", ID: 3, State: "active", HasLGR: true}
	if ev.Kind != rdma.EvSMCLinkDown || ev.SMC != want || ev.LQPN != 19 || ev.DevName != "rxe1" || ev.Port != 1 {
		t.Errorf("smc link record decoded as %+v", ev)
	}
	var f bpf.RdmatraceSmcFallbackEvent
	f.H.Kind, f.Inode, f.Reason = uint32(cSMCFallback), 1<<33|5, 0x03030000
	if err := d.Decode(bytesOf(&f), &ev); err != nil || ev.Kind != rdma.EvSMCFallback || ev.Inode != 1<<33|5 || ev.Status != 0x03030000 {
		t.Errorf("smc fallback record: %v, %+v", err, ev)
	}
}
