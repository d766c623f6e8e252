package peer

import (
	"context"
	"net/netip"
	"os"
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
	// settle, when set, is how long after a failure the peer's records
	// may still be on their way (see Settle).
	settle time.Duration
	now    func() time.Time
	sleep  func(time.Duration)
}

// NewNamer asks s, each question within timeout (0: 10 s).
func NewNamer(s store.Store, timeout time.Duration) *Namer {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Namer{s: s, timeout: timeout, cache: map[Failed]string{}, now: time.Now, sleep: time.Sleep}
}

// Settle makes a live why patient: a peer that dies is what fails its
// QP's partner, and its node's record of that death reaches the store a
// few seconds after (the owner's exit status is awaited up to 2 s, a
// batch leaves each second, the store makes it searchable within about
// one). A failure younger than d whose peer the store shows alive, or
// not at all, is asked about again once it is d old; the wait holds the
// caller (why's event loop), once per failure.
func (n *Namer) Settle(d time.Duration) { n.settle = d }

// DefaultSettle is a live why's Settle.
const DefaultSettle = 5 * time.Second

// maxCache bounds the answers kept.
const maxCache = 4096

// Name is the words why adds to a failed QP's sentence: "its peer QP 22
// on node-b (ib_write_bw[999], pod b) was freed 1.2 s earlier when its
// owner was killed by SIGKILL", or what was asked and what was missing.
func (n *Namer) Name(f Failed) string {
	if s, ok := n.cache[f]; ok {
		return s
	}
	s, final := n.name(f)
	if !final && n.settle > 0 {
		if wait := f.At.Add(n.settle).Sub(n.now()); wait > 0 {
			n.sleep(wait)
			s, _ = n.name(f)
		}
	}
	if len(n.cache) >= maxCache {
		clear(n.cache)
	}
	n.cache[f] = s
	return s
}

// name says what the store knows of f's peer; final is false when the
// peer may yet be recorded as ended (alive or unknown so far).
func (n *Namer) name(f Failed) (words string, final bool) {
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
			return "its peer is unknown: " + safe(err.Error()), true
		case own == nil:
			return "its peer is unknown: " + safe(n.s.String()) + " has no record of QP " + strconv.FormatUint(uint64(f.QPN), 10) +
				" on " + safe(f.Node) + " " + safe(f.Dev) + " (is this node's rdmatrace sending with --otlp --node " + safe(f.Node) + "?)", false
		case !own.RemoteGID.IsValid() || !own.HasRemoteQPN:
			return "its peer is unknown: the record of QP " + strconv.FormatUint(uint64(f.QPN), 10) + " on " + safe(f.Node) + " names no remote GID and QPN", true
		}
		gid, qpn = own.RemoteGID, own.RemoteQPN
	}
	a, err := Find(ctx, n.s, Query{Addr: gid, QPN: qpn, At: f.At})
	if err != nil && a.QP == nil && a.Missing == "" {
		return "its peer QP " + strconv.FormatUint(uint64(qpn), 10) + " at " + rdma.GIDText(gid) + " is unknown: " + safe(err.Error()), true
	}
	return Sentence(a), a.QP != nil && a.QP.Fate != rdma.FateAlive
}

// WhyOptions are `why --store`'s.
type WhyOptions struct {
	// Store is the log store's base URL.
	Store string
	// Node is the name this node's records carry (--node of its trace or
	// exporter; default: the host name): a failure's own QP is looked up
	// there when its event did not carry the peer.
	Node string
	// Timeout bounds each question to the store (0: 10 s).
	Timeout time.Duration
	// Live: the failures are happening now (see Namer.Settle).
	Live bool
}

// NamePeer opens o.Store and returns why.Options.NamePeer for o.Node.
func NamePeer(o WhyOptions) (func(*why.Line) string, error) {
	s, err := store.Open(o.Store, store.Options{Timeout: o.Timeout})
	if err != nil {
		return nil, err
	}
	if o.Node == "" {
		o.Node, _ = os.Hostname()
	}
	n := NewNamer(s, o.Timeout)
	if o.Live {
		n.Settle(DefaultSettle)
	}
	return ForWhy(n, o.Node), nil
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
