package correlate

import (
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// opFuncs are the kernel functions that do each control-path op's work
// (the uverbs handler of its command; ib_umem_get, the pinning inside
// reg_mr, is reported beside it).
var opFuncs = map[string][]string{
	"alloc-pd":       {"ib_uverbs_alloc_pd"},
	"create-cq":      {"ib_uverbs_handler_UVERBS_METHOD_CQ_CREATE", "ib_uverbs_create_cq", "ib_uverbs_ex_create_cq"},
	"create-qp":      {"ib_uverbs_handler_UVERBS_METHOD_QP_CREATE", "ib_uverbs_create_qp", "ib_uverbs_ex_create_qp"},
	"modify-qp-init": {"ib_uverbs_modify_qp", "ib_uverbs_ex_modify_qp"},
	"modify-qp-rtr":  {"ib_uverbs_modify_qp", "ib_uverbs_ex_modify_qp"},
	"modify-qp-rts":  {"ib_uverbs_modify_qp", "ib_uverbs_ex_modify_qp"},
	"reg-mr":         {"ib_uverbs_reg_mr"},
	"dereg-mr":       {"ib_dereg_mr_user"},
}

// OpKernel is a control-path op with the kernel's time for it.
type OpKernel struct {
	Op     bench.Op
	Func   string // the kernel function timed; "" when none was traced
	Kernel int64  // ns inside Func
	Pin    int64  // reg-mr: ns inside ib_umem_get (pinning the pages)
}

// Ops puts the kernel's time next to each op: the spans of its function
// on the op's thread within the op's time.
func Ops(ops []bench.Op, events []rdma.Event) []OpKernel {
	out := make([]OpKernel, len(ops))
	for i, op := range ops {
		out[i].Op = op
		fns := opFuncs[op.Name]
		lo, hi := op.Start, op.Start+op.Dur
		for k := range events {
			e := &events[k]
			if e.Kind != rdma.EvSpan || int(e.Owner.TID) != op.TID || int64(e.Mono) < lo || int64(e.End()) > hi {
				continue
			}
			if op.Name == "reg-mr" && e.Span.Func == "ib_umem_get" {
				out[i].Pin += int64(e.Span.Dur)
			}
			for _, f := range fns {
				if e.Span.Func == f {
					out[i].Func = f
					out[i].Kernel += int64(e.Span.Dur)
				}
			}
		}
	}
	return out
}
