package tracer

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// Recordings of version 1 ("rdmatrace-raw 1") hold the single record
// every kind once shared (struct event), whose fields meant different
// things by kind. convertV1 rewrites such a record as the per-kind record
// of today, field by field and deterministically: ReadRaw reads old
// recordings through it, and
//
//	go test ./tracer -run TestConvertRawRecordings -convert-raw
//
// rewrites testdata/tracer/*/trace.raw as version 2. That the converted
// recordings still decode to the trace.ndjson and trace.txt `rdmatrace
// trace` printed live (TestDecodeMatchesTheLiveStream) proves the
// conversion.

var convertRaw = flag.Bool("convert-raw", false, "rewrite testdata/tracer/*/trace.raw recordings of version 1 as version 2")

// Layout of version 1's struct event.
const (
	v1TS       = 0
	v1Cgroup   = 8
	v1Obj      = 16
	v1Kind     = 24
	v1Flags    = 28
	v1DevIndex = 32
	v1Port     = 36
	v1ID       = 40
	v1QPN      = 44
	v1OwnerPID = 48
	v1OwnerTID = 52
	v1ActorPID = 56
	v1ActorTID = 60
	v1CMEvent  = 64
	v1Status   = 68
	v1PS       = 72
	v1CMTP     = 76
	v1ResType  = 80
	v1QPType   = 81
	v1OldState = 82
	v1NewState = 83
	v1Suppress = 84
	v1DevName  = 88
	v1OwnComm  = 152
	v1KernName = 168
	v1ActComm  = 200
	v1Src      = 216
	v1Dst      = 244
	v1OwnerCg  = 272
	v1Dur      = 280
	v1Size     = 288
	v1Wait     = 296
	v1Func     = 304
	v1NextPID  = 308
	v1NextComm = 312
	v1Size328  = 328
	// Before owner_cgroup and the span fields were added, records ended
	// at owner_cgroup; such records carry no span, off-CPU, port-busy or
	// SMC link.
	v1Short = v1OwnerCg
)

// bytesOf is the memory of a generated record, to fill or to write out.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// convertV1 rewrites a version 1 record as today's record of its kind.
func convertV1(rec []byte) ([]byte, error) {
	if len(rec) != v1Short && len(rec) != v1Size328 {
		return nil, fmt.Errorf("version 1 record of %d bytes, expected %d or %d", len(rec), v1Short, v1Size328)
	}
	full := len(rec) == v1Size328
	le := binary.LittleEndian
	u32 := func(off int) uint32 { return le.Uint32(rec[off:]) }
	str := func(dst []int8, off int) { copy(chars(dst), rec[off:off+len(dst)]) }
	var h bpf.RdmatraceEventHdr
	h.Ts = le.Uint64(rec[v1TS:])
	h.Cgroup = le.Uint64(rec[v1Cgroup:])
	h.Obj = le.Uint64(rec[v1Obj:])
	if full {
		h.OwnerCgroup = le.Uint64(rec[v1OwnerCg:])
	}
	h.Kind, h.Flags = u32(v1Kind), u32(v1Flags)
	h.ActorPid, h.ActorTid = u32(v1ActorPID), u32(v1ActorTID)
	h.OwnerPid, h.OwnerTid = u32(v1OwnerPID), u32(v1OwnerTID)
	str(h.ActorComm[:], v1ActComm)
	str(h.OwnerComm[:], v1OwnComm)
	kind := bpf.RdmatraceEventKind(h.Kind)
	needFull := func(what string) error {
		if !full {
			return fmt.Errorf("version 1 %s record of %d bytes, expected %d", what, len(rec), v1Size328)
		}
		return nil
	}
	switch kind {
	case cResAdd, cResDel, cResBeginDel, cResCommitDel, cResAbortDel, cQPState, cCMIDCreate, cCM:
		var r bpf.RdmatraceResEvent
		r.H = h
		r.Dev.Index, r.Dev.Port = u32(v1DevIndex), u32(v1Port)
		str(r.Dev.Name[:], v1DevName)
		r.Res.Id, r.Res.Qpn = u32(v1ID), u32(v1QPN)
		r.Res.ResType, r.Res.QpType, r.Res.OldState, r.Res.NewState = rec[v1ResType], rec[v1QPType], rec[v1OldState], rec[v1NewState]
		str(r.Res.KernName[:], v1KernName)
		r.Addr.Ps = u32(v1PS)
		copy(r.Addr.Src[:], rec[v1Src:])
		copy(r.Addr.Dst[:], rec[v1Dst:])
		if full && h.Flags&uint32(cfHasSize) != 0 {
			r.Size = le.Uint64(rec[v1Size:])
		}
		r.CmTp, r.CmEvent, r.Status = u32(v1CMTP), u32(v1CMEvent), int32(u32(v1Status))
		return bytes.Clone(bytesOf(&r)), nil
	case cDevRegister, cDevUnregister, cDevUnregistered:
		var r bpf.RdmatraceDevEvent
		r.H = h
		r.Dev.Index, r.Dev.Port = u32(v1DevIndex), u32(v1Port)
		str(r.Dev.Name[:], v1DevName)
		return bytes.Clone(bytesOf(&r)), nil
	case cPortBusy:
		if err := needFull("port-busy"); err != nil {
			return nil, err
		}
		var r bpf.RdmatracePortBusyEvent
		r.H = h
		r.Dev.Index, r.Dev.Port = u32(v1DevIndex), u32(v1Port)
		str(r.Dev.Name[:], v1DevName)
		r.Res.Id, r.Res.Qpn = u32(v1ID), u32(v1QPN)
		r.Res.ResType, r.Res.QpType, r.Res.OldState, r.Res.NewState = rec[v1ResType], rec[v1QPType], rec[v1OldState], rec[v1NewState]
		str(r.Res.KernName[:], v1KernName)
		r.Addr.Ps = u32(v1PS)
		copy(r.Addr.Src[:], rec[v1Src:])
		copy(r.Addr.Dst[:], rec[v1Dst:])
		r.Op, r.Suppressed, r.Status = u32(v1Func), u32(v1Suppress), int32(u32(v1Status))
		return bytes.Clone(bytesOf(&r)), nil
	case cSMCFallback:
		var r bpf.RdmatraceSmcFallbackEvent
		r.H = h
		r.Addr.Ps = u32(v1PS)
		copy(r.Addr.Src[:], rec[v1Src:])
		copy(r.Addr.Dst[:], rec[v1Dst:])
		r.Inode, r.Reason = uint64(u32(v1ID)), int32(u32(v1Status))
		return bytes.Clone(bytesOf(&r)), nil
	case cSMCLinkCreate, cSMCLinkDown, cSMCLinkDestroy:
		if err := needFull("smc link"); err != nil {
			return nil, err
		}
		var r bpf.RdmatraceSmcLinkEvent
		r.H = h
		r.Dev.Index, r.Dev.Port = u32(v1DevIndex), u32(v1Port)
		str(r.Dev.Name[:], v1DevName)
		lgr := le.Uint64(rec[v1Size:]) // the link group's id | role << 32
		r.Qpn, r.LgrId, r.Role, r.Status = u32(v1QPN), uint32(lgr), uint8(lgr>>32&1), int32(u32(v1Status))
		r.QpType, r.LinkId, r.LinkState = rec[v1QPType], uint8(u32(v1ID)), rec[v1NewState]
		return bytes.Clone(bytesOf(&r)), nil
	case cSpan:
		if err := needFull("span"); err != nil {
			return nil, err
		}
		var r bpf.RdmatraceSpanEvent
		r.H = h
		r.Dev.Index, r.Dev.Port = u32(v1DevIndex), u32(v1Port)
		str(r.Dev.Name[:], v1DevName)
		r.Dur, r.Size, r.Func, r.Status = le.Uint64(rec[v1Dur:]), le.Uint64(rec[v1Size:]), u32(v1Func), int32(u32(v1Status))
		return bytes.Clone(bytesOf(&r)), nil
	case cOffCPU:
		if err := needFull("off-cpu"); err != nil {
			return nil, err
		}
		var r bpf.RdmatraceOffCpuEvent
		r.H = h
		r.Dur, r.Wait, r.NextPid = le.Uint64(rec[v1Dur:]), le.Uint64(rec[v1Wait:]), u32(v1NextPID)
		str(r.NextComm[:], v1NextComm)
		return bytes.Clone(bytesOf(&r)), nil
	}
	return nil, fmt.Errorf("version 1 record of unknown kind %d", kind)
}

// TestConvertRawRecordings rewrites the recordings in testdata/tracer that
// are still of version 1 (with -convert-raw), or checks there are none.
func TestConvertRawRecordings(t *testing.T) {
	files, _ := filepath.Glob("../testdata/tracer/*/trace.raw")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("rdmatrace-raw 1 ")) {
			continue
		}
		if !*convertRaw {
			t.Errorf("%s is a version 1 recording: convert it with -convert-raw", name)
			continue
		}
		clock, recs, err := ReadRaw(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var out bytes.Buffer
		w := NewRawWriter(&out, clock)
		for _, rec := range recs {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
