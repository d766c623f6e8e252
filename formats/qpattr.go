package formats

import (
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// appendQPAttrFields adds a qp-attr event's settings: each value the
// modify set, the source GID the QP uses with its netdev, and the risks.
func appendQPAttrFields[O fieldAppender[O]](o O, e *rdma.Event) O {
	a := &e.QPAttr
	o = o.numIf(a.Sets(rdma.QPMaskTimeout), "timeout", uint64(a.Timeout))
	o = o.numIf(a.Sets(rdma.QPMaskRetryCnt), "retry-cnt", uint64(a.RetryCnt))
	o = o.numIf(a.Sets(rdma.QPMaskRNRRetry), "rnr-retry", uint64(a.RNRRetry))
	o = o.numIf(a.Sets(rdma.QPMaskMinRNRTimer), "min-rnr-timer", uint64(a.MinRNRTimer))
	o = o.numIf(a.Sets(rdma.QPMaskPathMTU), "path-mtu", uint64(rdma.PathMTUBytes(a.PathMTU)))
	if a.HasGID {
		o = o.num("sgid-index", uint64(a.SGIDIndex)).gid("sgid", a.SGID).str("gid-type", a.GIDType.Name(a.HasNdev))
	}
	if a.HasNdev {
		o = o.str("gid-ndev", a.Ndev).num("gid-ndev-mtu", uint64(a.NdevMTU))
		o = o.numIf(a.HasVLAN, "gid-vlan", uint64(a.VLAN))
		o = o.numIf(a.NetNS != 0, "gid-netns", a.NetNS)
	}
	if a.HasGRH {
		o = o.gid("dgid", a.DGID)
	}
	return o.list("risks", nonNil(a.Risks()))
}

// appendQPAttr is the human view of a qp-attr event's settings, each in
// words ("min_rnr_timer 0 = 655.36 ms"), then its risks.
func appendQPAttr(b []byte, col int, e *rdma.Event) []byte {
	for i, w := range e.QPAttr.Words() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(word(b, col), Sanitize(w)...)
	}
	if r := e.QPAttr.Risks(); len(r) > 0 {
		b = append(word(b, col), "RISK"...)
		for _, x := range r {
			b = append(append(b, ' '), x...)
		}
	}
	return b
}
