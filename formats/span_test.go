package formats

import (
	"bytes"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// spanSample is what the tracer reports for an rdmabench run: spans of the
// functions behind a registration and a connect, off-CPU spells (asleep,
// preempted, a hostile comm), and an MR create with its length.
func spanSample() []rdma.Event {
	at := func(us int64) time.Time {
		return time.Unix(1700000000, 0).Add(time.Duration(us) * time.Microsecond).UTC()
	}
	bench := rdma.Owner{PID: 900, TID: 901, Comm: "rdmabench"}
	noise := rdma.Owner{PID: 950, TID: 950, Comm: "noise"}
	return []rdma.Event{
		{Mono: 1000, Time: at(1), Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_uverbs_reg_mr", Dur: 1234567}, Flags: rdma.EvHasDur | rdma.EvHasOwner, Resource: rdma.Resource{Owner: noise}, Actor: noise},
		{Mono: 2000, Time: at(2), Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_umem_get", Dur: 1000001}, Size: 1 << 30, Resource: rdma.Resource{DevName: "rxe0", DevIndex: 1, Owner: noise}, Flags: rdma.EvHasDur | rdma.EvHasSize | rdma.EvHasOwner | rdma.EvHasDev, Actor: noise},
		{Mono: 3000, Time: at(3), Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResMR, DevName: "rxe0", DevIndex: 1, Owner: noise}, ID: 7, Size: 1 << 30,
			Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser | rdma.EvHasSize, Actor: noise},
		{Mono: 4000, Time: at(4), Kind: rdma.EvSpan, Span: rdma.Span{Func: "rdma_resolve_addr", Dur: 999}, Status: -110, Flags: rdma.EvHasDur | rdma.EvHasOwner, Resource: rdma.Resource{Owner: bench}, Actor: bench},
		{Mono: 5000, Time: at(5), Kind: rdma.EvOffCPU, OffCPU: rdma.OffCPU{Dur: 30_400_000, Wait: 5_000, Next: rdma.Owner{PID: 31585, TID: 31585, Comm: "kworker/u8:3"}}, Flags: rdma.EvHasDur | rdma.EvHasOwner, Resource: rdma.Resource{Owner: bench}, Actor: bench},
		{Mono: 6000, Time: at(6), Kind: rdma.EvOffCPU, OffCPU: rdma.OffCPU{Dur: 4_000_123, Next: rdma.Owner{PID: 990, TID: 990, Comm: "hog\x1b[2J"}}, Flags: rdma.EvHasDur | rdma.EvHasOwner | rdma.EvPreempted, Resource: rdma.Resource{Owner: bench}, Actor: bench},
		{Mono: 7000, Time: at(7), Kind: rdma.EvSpan, Span: rdma.Span{Func: "rdma_connect_locked", Dur: 12}, Resource: rdma.Resource{Src: netip.MustParseAddrPort("10.99.0.1:5000"), Owner: bench}, Flags: rdma.EvHasDur | rdma.EvHasOwner, Actor: bench},
	}
}

func TestSpanAndOffCPUEventsGolden(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // the human view prints local time
	defer func() { time.Local = local }()
	var nd, txt bytes.Buffer
	w := NewNDJSONWriter(&nd)
	for _, e := range spanSample() {
		if err := w.Write(EventObject(&e)); err != nil {
			t.Fatal(err)
		}
		txt.WriteString(EventLine(&e) + "\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../testdata/formats/spans.ndjson", nd.Bytes())
	golden.Check(t, "../testdata/formats/spans.txt", txt.Bytes())
	if bytes.ContainsAny(txt.Bytes(), "\x1b") || bytes.ContainsAny(nd.Bytes(), "\x1b") {
		t.Error("a control character reached the output")
	}
}
