package formats

import (
	"bytes"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A program's leaks with their call sites (--stacks): the human report
// sums them up by call site after the table ("2 QPs created at setup_conn
// (leakqp.c:41) via ibv_create_qp were never destroyed", the callers
// below); -j carries each one's frames.
func TestLeakReportGroupsLeaksByCallSite(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 1, 0, time.UTC)
	bin, libc := "/usr/libexec/rdmatrace-test/leakqp", "/usr/lib/x86_64-linux-gnu/libc.so.6"
	helper := &rdma.CallStack{Via: "ibv_create_qp", Frames: []rdma.CallFrame{
		{Func: "setup_conn", File: "guest/workloads/leakqp.c", Line: 41, Binary: bin, Offset: 0x1a2b, BuildID: "5e1f"},
		{Func: "main", File: "guest/workloads/leakqp.c", Line: 97, Binary: bin, Offset: 0x1c40, BuildID: "5e1f"},
		{Binary: libc, Offset: 0x2724a, BuildID: "93ac"}}}
	inMain := &rdma.CallStack{Via: "rdma_create_id", Frames: []rdma.CallFrame{
		{Binary: bin + "-stripped", Offset: 0x1d00, BuildID: "77aa"}},
		Partial: "0x5f3a00000000 is in no file the process maps (JIT code, or it has exited)"}
	leak := func(res rdma.ResType, lqpn uint32, s *rdma.CallStack) LeakRecord {
		e := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser | rdma.EvActorExiting,
			Resource: rdma.Resource{Type: res, DevName: "rxe0", Owner: rdma.Owner{PID: 300, TID: 300, Comm: "leakqp"}}, ID: 4, Stack: s}
		if lqpn != 0 {
			e.LQPN, e.QPType = lqpn, rdma.QPTypeRC
			e.Resource.Has |= rdma.HasLQPN | rdma.HasQPType
		}
		return LeakRecord{Finding: &rdma.Finding{Report: rdma.LeakExitCleanup, Time: at, Res: e, Age: 1500 * time.Millisecond}}
	}
	recs := []LeakRecord{leak(rdma.ResQP, 17, helper), leak(rdma.ResQP, 18, helper), leak(rdma.ResCMID, 0, inMain), leak(rdma.ResPD, 0, nil)}
	for _, tc := range []struct {
		f    Format
		file string
	}{{FormatText, "callsites.txt"}, {FormatNDJSON, "callsites.ndjson"}} {
		var b bytes.Buffer
		s := NewLeakSink(&b, tc.f)
		for _, r := range recs {
			if err := s.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "../testdata/leaks/"+tc.file, b.Bytes())
	}
}
