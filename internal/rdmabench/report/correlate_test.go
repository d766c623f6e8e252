package report

import (
	"bytes"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

func TestCorrelationRecordsGolden(t *testing.T) {
	s, ev := correlate.Fixture()
	ev = append(ev, rdma.Event{Mono: uint64(s[900].Start), Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner,
		Resource: rdma.Resource{Owner: rdma.Owner{PID: 100, TID: 101, Comm: "rdmabench"}}, OffCPU: rdma.OffCPU{Dur: 1000, Next: rdma.Owner{TID: 7, Comm: "evil\x1b]0;x\a\u009b"}}})
	r := correlate.Outliers(s, ev, correlate.Options{PID: 100, Threads: []int{101}, Dev: "rxe0"})
	conns, cev := correlate.ConnFixture()
	cr := correlate.Connections(conns, cev)
	ops := correlate.Ops([]bench.Op{{Name: "reg-mr", Size: 1 << 30, TID: 7, Start: 1000, Dur: 5000}, {Name: "alloc-pd", TID: 7, Start: 7000, Dur: 100}},
		[]rdma.Event{{Mono: 1100, Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_uverbs_reg_mr", Dur: 4000}, Resource: rdma.Resource{Owner: rdma.Owner{TID: 7}}},
			{Mono: 1200, Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_umem_get", Dur: 3000}, Resource: rdma.Resource{Owner: rdma.Owner{TID: 7}}}})
	var js, txt bytes.Buffer
	for _, err := range []error{WriteOutliersJSON(&js, &r, 2), WritePhasesJSON(&js, &cr), WriteOpKernelJSON(&js, ops),
		WriteOutliersText(&txt, &r), WritePhasesText(&txt, &cr), WriteOpKernelText(&txt, ops)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, "../../../testdata/formats/correlate.ndjson", js.Bytes())
	golden.Check(t, "../../../testdata/formats/correlate.txt", txt.Bytes())
	for _, out := range [][]byte{js.Bytes(), txt.Bytes()} {
		if bytes.ContainsAny(out, "\x1b\a") || bytes.Contains(out, []byte("\u009b")) {
			t.Error("a control character reached the output")
		}
	}
}
