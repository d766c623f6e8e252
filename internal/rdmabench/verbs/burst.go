package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// The steps of one QP of a burst, named as ctrl and conn name them: over
// verbs, and over rdma_cm (cmtime's). BurstQP.Steps are in this order.
var (
	BurstVerbsSteps = []string{"create-qp", "modify-qp-init", "modify-qp-rtr", "modify-qp-rts", "destroy-qp"}
	BurstCMSteps    = []string{"create-id", "resolve-addr", "resolve-route", "create-qp", "connect", "disconnect", "destroy"}
	// BurstRankSteps are a rank's own: before its QPs and after them.
	BurstRankSteps = []string{"open-device", "alloc-pd", "create-cq", "destroy-cq", "dealloc-pd", "close-device"}
)

// Their numbers in the C loop must be the names' places.
var _ = [1]struct{}{}[len(BurstVerbsSteps)-C.RB_BV_NSTEPS]
var _ = [1]struct{}{}[len(BurstCMSteps)-C.RB_BC_NSTEPS]
var _ = [1]struct{}{}[len(BurstRankSteps)-C.RB_B_NSETUP]
var _ = [1]struct{}{}[bench.BurstSteps-C.RB_B_MAXSTEPS]
var _ = [1]struct{}{}[unsafe.Sizeof(bench.BurstQP{})-C.sizeof_struct_rb_burst_qp]

// BurstOrder is the order in which a rank brings its QPs to RTS over verbs.
type BurstOrder int

const (
	// OrderNCCL creates every QP and moves it to INIT, then moves each to
	// RTR and RTS: NCCL creates a QP per connection, then completes each
	// once its peer's number has come.
	OrderNCCL BurstOrder = C.RB_ORDER_NCCL
	// OrderPairs brings one pair at a time to RTS.
	OrderPairs BurstOrder = C.RB_ORDER_PAIRS
	// OrderPhases runs each verb for every QP before the next verb.
	OrderPhases BurstOrder = C.RB_ORDER_PHASES
)

var orderNames = map[BurstOrder]string{OrderNCCL: "nccl", OrderPairs: "pairs", OrderPhases: "phases"}

func (o BurstOrder) String() string { return orderNames[o] }

// ParseBurstOrder reads "nccl", "pairs" or "phases".
func ParseBurstOrder(s string) (BurstOrder, error) {
	for o, n := range orderNames {
		if n == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("order %q: want nccl, pairs or phases", s)
}

// BurstConfig is one rank's share of a burst.
type BurstConfig struct {
	Dev      string
	Port     int
	GIDIndex int
	QPs      int
	Order    BurstOrder // over verbs
	// CM connects the pairs over rdma_cm: the rank listens on Addr:CMPort
	// and connects half its QPs to itself, Window connections in flight.
	CM      bool
	Addr    string
	CMPort  int
	Window  int
	Timeout time.Duration // an rdma_cm event awaited this long has failed
}

// BurstRank is one rank of a burst: its device context, PD and CQ, and its
// QPs. Every call must come from the thread that opened it (lock it): the
// thread is the one the kernel sees create the QPs.
type BurstRank struct {
	b    *C.struct_rb_burst
	cfg  BurstConfig
	qps  []bench.BurstQP
	rank [C.RB_B_NSETUP]C.struct_rb_step
}

// OpenBurst opens the device and makes the rank's PD and CQ (over rdma_cm,
// its listener too).
func OpenBurst(cfg BurstConfig) (*BurstRank, error) {
	if cfg.QPs < 1 {
		return nil, fmt.Errorf("%d QPs: need at least 1", cfg.QPs)
	}
	if cfg.CM && cfg.QPs%2 != 0 {
		return nil, fmt.Errorf("%d QPs over rdma_cm: need an even number (a connection has a QP at each end)", cfg.QPs)
	}
	r := &BurstRank{b: C.rb_burst_new(), cfg: cfg, qps: make([]bench.BurstQP, cfg.QPs)}
	if r.b == nil {
		return nil, errors.New("no memory for a burst rank")
	}
	dev := cstr(cfg.Dev)
	defer C.free(unsafe.Pointer(dev))
	if C.rb_burst_open(r.b, dev, C.int(cfg.Port), C.int(cfg.GIDIndex), C.int(cfg.QPs), cbool(cfg.CM), &r.rank[0]) != 0 {
		return nil, r.fail()
	}
	if cfg.CM {
		addr := cstr(cfg.Addr)
		defer C.free(unsafe.Pointer(addr))
		if C.rb_burst_cm_listen(r.b, addr, C.int(cfg.CMPort)) != 0 {
			return nil, r.fail()
		}
	}
	return r, nil
}

// fail is the error of the last call, after which the rank is freed.
func (r *BurstRank) fail() error {
	err := errors.New(C.GoString(C.rb_burst_err(r.b)))
	r.Free()
	return err
}

func (r *BurstRank) recs() *C.struct_rb_burst_qp {
	return (*C.struct_rb_burst_qp)(unsafe.Pointer(&r.qps[0]))
}

// Connect creates every QP and brings it to RTS, connected to its pair's
// other QP.
func (r *BurstRank) Connect() error {
	var n C.int
	if r.cfg.CM {
		n = C.rb_burst_cm_connect(r.b, r.recs(), C.int(max(r.cfg.Window, 1)), C.int64_t(r.cfg.Timeout))
	} else {
		n = C.rb_burst_connect(r.b, r.recs(), C.int(r.cfg.Order))
	}
	if n < 0 {
		return errors.New(C.GoString(C.rb_burst_err(r.b)))
	}
	return nil
}

// Destroy destroys every QP made (over rdma_cm: disconnects first).
func (r *BurstRank) Destroy() error {
	var n C.int
	if r.cfg.CM {
		n = C.rb_burst_cm_destroy(r.b, r.recs(), C.int64_t(r.cfg.Timeout))
	} else {
		n = C.rb_burst_destroy(r.b, r.recs())
	}
	if n < 0 {
		return errors.New(C.GoString(C.rb_burst_err(r.b)))
	}
	return nil
}

// Close destroys the CQ and the PD and closes the device.
func (r *BurstRank) Close() {
	C.rb_burst_close(r.b, &r.rank[0])
}

// Free releases what is left and the rank itself.
func (r *BurstRank) Free() {
	if r.b != nil {
		C.rb_burst_free(r.b)
		r.b = nil
	}
}

// QPs are the rank's QPs with their steps' times so far.
func (r *BurstRank) QPs() []bench.BurstQP { return r.qps }

// TID is the thread that opened the rank.
func (r *BurstRank) TID() int { return int(C.rb_burst_tid(r.b)) }

// RankSteps are the times of the rank's own steps (BurstRankSteps): those
// not run yet are zero.
func (r *BurstRank) RankSteps() []bench.StepTime {
	out := make([]bench.StepTime, len(r.rank))
	for i, s := range r.rank {
		out[i] = bench.StepTime{Start: int64(s.start), Dur: int64(s.dur)}
	}
	return out
}
