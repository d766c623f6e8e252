package formats

import (
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// appendCallFailFields adds what a failed call says (trace -j): the
// errno, what was asked, the device's limits and the limit that refused
// it. The call itself is func; the sentence is why.
func appendCallFailFields[O fieldAppender[O]](o O, e *rdma.Event) O {
	c := &e.CallFail
	o = o.field(Field{Key: "status", Kind: Int, Num: uint64(int64(-c.Errno))})
	o = o.str("status-name", rdma.ErrnoName(c.Errno))
	a := &c.Asked
	if a.Has&rdma.AskedQP != 0 {
		o = o.str("asked-qp-type", a.QPType.String()).num("asked-send-wr", uint64(a.MaxSendWR)).
			num("asked-recv-wr", uint64(a.MaxRecvWR)).num("asked-send-sge", uint64(a.MaxSendSGE)).
			num("asked-recv-sge", uint64(a.MaxRecvSGE)).num("asked-inline", uint64(a.MaxInlineData))
	}
	if a.Has&rdma.AskedCQE != 0 {
		o = o.num("asked-cqe", uint64(a.CQE))
	}
	if a.Has&rdma.AskedMR != 0 {
		o = o.num("asked-length", a.Length).num("asked-access", uint64(a.Access))
	}
	if d := &c.Caps; d.Valid {
		o = o.num("max-qp-wr", uint64(d.MaxQPWR)).num("max-send-sge", uint64(d.MaxSendSGE)).
			num("max-recv-sge", uint64(d.MaxRecvSGE)).num("max-cqe", uint64(d.MaxCQE)).num("max-mr-size", d.MaxMRSize).
			num("max-qp", uint64(d.MaxQP)).num("max-cq", uint64(d.MaxCQ)).num("max-mr", uint64(d.MaxMR)).
			num("max-pd", uint64(d.MaxPD)).num("max-srq", uint64(d.MaxSRQ))
	}
	l := &c.Limit
	switch l.Kind {
	case rdma.LimitRDMACgroup:
		o = o.str("limit", l.Kind.String()).str("rdmacg-res", l.CgroupRes)
		if cg := l.Cgroup; cg != nil {
			max := "max"
			if cg.Max >= 0 {
				max = strconv.FormatInt(cg.Max, 10)
			}
			o = o.str("rdmacg-path", cg.Path).str("rdmacg-max", max).num("rdmacg-current", uint64(cg.Current))
		}
	case rdma.LimitMemlock:
		o = o.str("limit", l.Kind.String()).num("memlock", l.Memlock).num("pinned-pages", l.Pinned).num("needed-pages", l.NPages)
	}
	return o
}

// appendGIDFields adds a GID table change's entry (trace -j).
func appendGIDFields[O fieldAppender[O]](o O, e *rdma.Event) O {
	g := &e.GID
	op := "del"
	if g.Added {
		op = "add"
	}
	o = o.str("gid-op", op).str("gid", g.GID.String()).num("gid-index", uint64(g.Index)).
		str("gid-type", g.Type.Name(g.Netdev != ""))
	if g.Netdev != "" {
		o = o.str("gid-ndev", g.Netdev)
	}
	return o
}
