package correlate

import (
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// BurstFixture is a small burst over verbs and a trace of it, for tests:
// two ranks (pids 100 and 200, threads 101 and 201) of three QPs each
// (10-12, 20-22), told to go at 1 ms, each QP's steps a millisecond
// apart. The trace shows every lifecycle event but QP 11's RTS (its one
// RTS event is long after the QP's life), QP 21's RTR (traced with pid
// 999) and QP 22's destroy; and a create of QP 10 on another device.
func BurstFixture() (bench.BurstPass, []rdma.Event) {
	const ms = 1_000_000
	p := bench.BurstPass{Steps: []string{"create-qp", "modify-qp-init", "modify-qp-rtr", "modify-qp-rts", "destroy-qp"}, Go: ms}
	var evs []rdma.Event
	states := []rdma.QPState{0, rdma.QPStateInit, rdma.QPStateRTR, rdma.QPStateRTS}
	for r, pid := range []int{100, 200} {
		rank := bench.BurstRank{PID: pid, TID: pid + 1,
			Setup: []bench.StepTime{{Start: ms / 2, Dur: 1000}, {Start: ms/2 + 2000, Dur: 500}, {Start: ms/2 + 3000, Dur: 700}}}
		for q := 0; q < 3; q++ {
			qpn := uint32(10*(r+1) + q)
			var qp bench.BurstQP
			qp.QPN = qpn
			base := int64(2+q*4) * ms
			for s := 0; s < 4; s++ {
				qp.Steps[s] = bench.StepTime{Start: base + int64(s)*ms, Dur: int64(100+10*s+q) * 1000}
			}
			// destroyed after a hold of 100 ms
			qp.Steps[4] = bench.StepTime{Start: 120*ms + int64(q+3*r)*ms, Dur: int64(200+q) * 1000}
			rank.QPs = append(rank.QPs, qp)
			for s := 0; s < 5; s++ {
				e := rdma.Event{Mono: uint64(qp.Steps[s].Start + qp.Steps[s].Dur/2), Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvUser}
				e.Type, e.DevName, e.LQPN, e.QPType = rdma.ResQP, "rxe0", qpn, rdma.QPTypeRC
				e.Resource.Has |= rdma.HasLQPN
				e.Owner = rdma.Owner{PID: uint32(pid), TID: uint32(pid + 1), Comm: "rdmabench"}
				switch s {
				case 0:
					e.Kind = rdma.EvCreate
				case 4:
					e.Kind = rdma.EvDestroy
				default:
					e.Kind, e.QPState = rdma.EvModify, states[s]
					e.Resource.Has |= rdma.HasState
				}
				switch {
				case qpn == 11 && s == 3:
					e.Mono += 10_000 * ms // long after: another QP's
				case qpn == 21 && s == 2:
					e.Owner.PID = 999
				case qpn == 22 && s == 4:
					continue
				}
				evs = append(evs, e)
				if qpn == 10 && s == 0 {
					e.DevName = "mlx5_0"
					evs = append(evs, e)
				}
			}
		}
		p.Ranks = append(p.Ranks, rank)
	}
	return p, evs
}
