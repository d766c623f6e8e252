package correlate

import (
	"net/netip"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// Fixtures: small runs with known answers, for this package's tests and
// the golden tests of the renderers (formats/, perfetto/, plot/).

const ms = int64(1e6)

var (
	benchOwner = rdma.Owner{PID: 100, TID: 101, Comm: "rdmabench"}
	noise      = rdma.Owner{PID: 200, TID: 200, Comm: "noise"}
)

// Fixture is a lat run of 1000 samples of 20 µs, one every 50 µs from
// 1 s, with three slow ones (at 100, 500 and 900) and what happened
// around them; shared with the renderers' golden tests in formats/.
func Fixture() ([]bench.Sample, []rdma.Event) {
	var s []bench.Sample
	for i := range 1000 {
		lat := int64(20_000)
		switch i {
		case 100, 500, 900:
			lat = 2 * ms
		}
		s = append(s, bench.Sample{Start: 1000*ms + int64(i)*50_000, Lat: lat})
	}
	at := func(i int) uint64 { return uint64(1000*ms + int64(i)*50_000) }
	ev := []rdma.Event{
		// 100: a hog ran in the benchmark thread's place (longest), a
		// kworker last.
		{Mono: at(100) + 10_000, Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner | rdma.EvPreempted,
			Resource: rdma.Resource{Owner: benchOwner}, OffCPU: rdma.OffCPU{Dur: uint64(ms), Next: rdma.Owner{PID: 300, TID: 300, Comm: "hog"}}, Actor: rdma.Owner{PID: 44, TID: 44, Comm: "kworker/1:1H"}},
		// 500: another process registered 1 GiB (span, then the MR).
		{Mono: at(500) - uint64(ms), Kind: rdma.EvSpan, Span: rdma.Span{Func: "ib_uverbs_reg_mr", Dur: uint64(2 * ms)}, Flags: rdma.EvHasDur | rdma.EvHasOwner, Resource: rdma.Resource{Owner: noise}},
		{Mono: at(500) + uint64(ms), Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResMR, DevName: "rxe0", Owner: noise}, Size: 1 << 30,
			Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner | rdma.EvHasSize},
		// not a cause: the benchmark's own MR, another device's QP, a
		// spell of a thread that is not timed, a QP far from any outlier
		{Mono: at(500), Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResMR, DevName: "rxe0", Owner: benchOwner}, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner},
		{Mono: at(500), Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResQP, DevName: "mlx5_0", Owner: noise}, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner},
		{Mono: at(500), Kind: rdma.EvOffCPU, OffCPU: rdma.OffCPU{Dur: uint64(ms)}, Flags: rdma.EvHasDur | rdma.EvHasOwner, Resource: rdma.Resource{Owner: rdma.Owner{PID: 100, TID: 105, Comm: "rdmabench"}}},
		{Mono: at(300), Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Owner: noise}, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner},
		// 900: nothing.
	}
	return s, ev
}

// ConnFixture is two connections: the first with every milestone traced,
// the second with no route resolution traced and an RTS seen out of order.
func ConnFixture() ([]bench.Conn, []rdma.Event) {
	cli := netip.MustParseAddrPort("10.99.0.1:40000")
	srv := netip.MustParseAddrPort("10.99.0.1:18516")
	var conns []bench.Conn
	var ev []rdma.Event
	for i := range 2 {
		base := int64(1000+100*i) * ms
		c := cli
		if i == 1 {
			c = netip.MustParseAddrPort("10.99.0.1:40001")
		}
		conn := bench.Conn{Index: i + 1, Start: base, End: base + 60*ms,
			Client: bench.Side{PID: 100, TID: 101, Src: c, Dst: srv, Steps: []bench.Step{
				{Name: "create-id", Start: base, Dur: ms}, {Name: "connect", Start: base + 10*ms, Dur: 30 * ms},
				{Name: "disconnect", Start: base + 45*ms, Dur: 5 * ms}, {Name: "destroy", Start: base + 50*ms, Dur: 10 * ms}}},
			Server: bench.Side{PID: 100, TID: 102, Src: srv, Dst: c}}
		conns = append(conns, conn)
		cm := func(t int64, k rdma.EventKind, e rdma.CMEvent, src, dst netip.AddrPort) rdma.Event {
			f := rdma.EvHasRes
			if k == rdma.EvCMEventHandler {
				f |= rdma.EvHasCM
			}
			return rdma.Event{Mono: uint64(base + t), Kind: k, CMEvent: e, Resource: rdma.Resource{Src: src, Dst: dst, Type: rdma.ResCMID, Has: rdma.HasSrcAddr | rdma.HasPS}, Flags: f}
		}
		qp := func(t int64, tid uint32, s rdma.QPState) rdma.Event {
			return rdma.Event{Mono: uint64(base + t), Kind: rdma.EvModify, Resource: rdma.Resource{Type: rdma.ResQP, Owner: rdma.Owner{PID: 100, TID: tid}, QPState: s, Has: rdma.HasState},
				Flags: rdma.EvHasRes | rdma.EvHasOwner}
		}
		ev = append(ev, cm(3*ms, rdma.EvCMEventHandler, cmAddrResolved, c, srv))
		if i == 0 {
			ev = append(ev, cm(6*ms, rdma.EvCMEventHandler, cmRouteResolved, c, srv))
		}
		ev = append(ev, qp(8*ms, 101, rdma.QPStateInit), cm(12*ms, rdma.EvCMSendReq, 0, c, srv),
			cm(15*ms, rdma.EvCMEventHandler, cmConnectRequest, srv, c), qp(20*ms, 102, rdma.QPStateRTS),
			cm(21*ms, rdma.EvCMSendRep, 0, srv, c), qp(30*ms, 101, rdma.QPStateRTS), cm(31*ms, rdma.EvCMSendRTU, 0, c, srv),
			cm(35*ms, rdma.EvCMEventHandler, cmEstablished, srv, c))
	}
	return conns, ev
}
