package peer

import (
	"context"
	"net/netip"
	"strconv"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Failed is a QP that failed, as `rdmatrace why` knows it: where (this
// node, its device, its QPN), when, and its peer when the failure's event
// carried it (an error completion's or an async event's).
type Failed struct {
	Node, Dev string
	QPN       uint32
	At        time.Time
	// PeerGID and PeerQPN are the peer's, when HasPeer; else the QP's own
	// identity record (its node sent it at the connect) names its peer.
	PeerGID netip.Addr
	PeerQPN uint32
	HasPeer bool
}

// Namer names failed QPs' peers for `rdmatrace why --store`: one question
// to the store per peer and failure time, answers kept.
type Namer struct {
	s       store.Store
	timeout time.Duration
	cache   map[Failed]string
}

// NewNamer asks s, each question within timeout (0: 10 s).
func NewNamer(s store.Store, timeout time.Duration) *Namer {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Namer{s: s, timeout: timeout, cache: map[Failed]string{}}
}

// maxCache bounds the answers kept.
const maxCache = 4096

// Name is the words why adds to a failed QP's sentence: "its peer QP 22
// on node-b (ib_write_bw[999], pod b) was freed 1.2 s earlier when its
// owner was killed by SIGKILL", or what was asked and what was missing.
func (n *Namer) Name(f Failed) string {
	if s, ok := n.cache[f]; ok {
		return s
	}
	s := n.name(f)
	if len(n.cache) >= maxCache {
		clear(n.cache)
	}
	n.cache[f] = s
	return s
}

func (n *Namer) name(f Failed) string {
	ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
	defer cancel()
	gid, qpn := f.PeerGID, f.PeerQPN
	if !f.HasPeer {
		// The QP's own record, sent by this node at its connect, names
		// its peer.
		qps, err := n.s.QPs(ctx, store.QPQuery{Node: f.Node, Dev: f.Dev, QPN: f.QPN, CreatedBy: f.At, Limit: MaxRecords})
		own, _ := choose(Lifetimes(qps), f.At)
		switch {
		case own == nil && err != nil:
			return "its peer is unknown: " + safe(err.Error())
		case own == nil:
			return "its peer is unknown: " + safe(n.s.String()) + " has no record of QP " + strconv.FormatUint(uint64(f.QPN), 10) +
				" on " + safe(f.Node) + " " + safe(f.Dev) + " (is this node's rdmatrace sending with --otlp --node " + safe(f.Node) + "?)"
		case !own.RemoteGID.IsValid() || !own.HasRemoteQPN:
			return "its peer is unknown: the record of QP " + strconv.FormatUint(uint64(f.QPN), 10) + " on " + safe(f.Node) + " names no remote GID and QPN"
		}
		gid, qpn = own.RemoteGID, own.RemoteQPN
	}
	a, err := Find(ctx, n.s, Query{Addr: gid, QPN: qpn, At: f.At})
	if err != nil && a.QP == nil && a.Missing == "" {
		return "its peer QP " + strconv.FormatUint(uint64(qpn), 10) + " at " + rdma.GIDText(gid) + " is unknown: " + safe(err.Error())
	}
	return Sentence(a)
}

// ForWhy is why.Options.NamePeer for this node (node, the name its
// records carry): a failed QP's event gives its device, number and time,
// and its peer when it carried one.
func ForWhy(n *Namer, node string) func(*why.Line) string {
	return func(l *why.Line) string {
		e := &l.Res
		f := Failed{Node: node, Dev: e.DevName, QPN: e.LQPN, At: l.Time}
		if e.Fault.HasPeer() {
			f.PeerGID, f.PeerQPN, f.HasPeer = e.Fault.PeerGID, e.Fault.PeerQPN, true
		}
		return n.Name(f)
	}
}
