package correlate

import (
	"net/netip"
	"sort"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// Phases of an rdma_cm connection, in order, each ending at a milestone.
// All are seen on one host (both ends in one run, one clock).
var Phases = []string{
	"resolve-addr",   // create the ID, resolve the address: until the client's ADDR_RESOLVED
	"resolve-route",  // until ROUTE_RESOLVED
	"create-qp-init", // the client's QP created and moved to INIT
	"send-req",       // until the client's REQ is sent (cm_send_req)
	"server-req",     // the server's rdma_cm handles the REQ (CONNECT_REQUEST)
	"server-rtr-rts", // the server's program creates its QP, moves it to RTR and RTS
	"send-rep",       // until the server's REP is sent (cm_send_rep)
	"client-rtr-rts", // the REP arrives, the client's QP moves to RTR and RTS
	"send-rtu",       // until the client's RTU is sent (cm_send_rtu)
	"established",    // the server's ID is ESTABLISHED
	"client-ready",   // the client's program has ESTABLISHED (end of its connect step)
	"disconnect",     // until the client's disconnect step ends
	"destroy",        // until the client's last step ends
}

// ConnPhases is one connection's phases: ns per phase in Phases order.
// A milestone that was not traced folds its phase into the next one
// (Missing names it); the phases always add up to Total.
type ConnPhases struct {
	Index   int
	Start   int64
	Total   int64
	Phases  []int64
	Ends    []int64 // CLOCK_MONOTONIC ns at which each phase ended
	Missing []string
}

// PhaseStats is one phase over all connections.
type PhaseStats struct {
	Name  string
	Dist  bench.Dist // µs
	Share float64    // of the summed totals, 0..1
}

// ConnResult is every connection and each phase's distribution.
type ConnResult struct {
	Conns []ConnPhases
	Stats []PhaseStats
	// SumOK: every connection's phases add up to its total.
	SumOK bool
}

// enum rdma_cm_event_type values the milestones look for.
const (
	cmAddrResolved   rdma.CMEvent = 0
	cmRouteResolved  rdma.CMEvent = 2
	cmConnectRequest rdma.CMEvent = 4
	cmEstablished    rdma.CMEvent = 9
)

type milestone func(e *rdma.Event, c *bench.Conn) bool

func cmEvent(e *rdma.Event, k rdma.EventKind, ev rdma.CMEvent) bool {
	return e.Kind == k && (k != rdma.EvCMEventHandler || (e.Has(rdma.EvHasCM) && e.CMEvent == ev))
}

// clientID: an rdma_cm event of the client's ID (source is the client).
func clientID(e *rdma.Event, c *bench.Conn) bool {
	return e.Given(rdma.HasSrcAddr) && sameAddr(e.Src, c.Client.Src)
}

// serverID: an event of the server's ID for this client (destination is the client).
func serverID(e *rdma.Event, c *bench.Conn) bool {
	return e.Given(rdma.HasSrcAddr) && sameAddr(e.Dst, c.Client.Src)
}

func sameAddr(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

func qpTo(e *rdma.Event, tid int, s rdma.QPState) bool {
	return e.Kind == rdma.EvModify && e.Type == rdma.ResQP && int(e.Owner.TID) == tid && e.QPState == s
}

var milestones = []milestone{
	func(e *rdma.Event, c *bench.Conn) bool {
		return clientID(e, c) && cmEvent(e, rdma.EvCMEventHandler, cmAddrResolved)
	},
	func(e *rdma.Event, c *bench.Conn) bool {
		return clientID(e, c) && cmEvent(e, rdma.EvCMEventHandler, cmRouteResolved)
	},
	func(e *rdma.Event, c *bench.Conn) bool { return qpTo(e, c.Client.TID, rdma.QPStateInit) },
	func(e *rdma.Event, c *bench.Conn) bool { return clientID(e, c) && e.Kind == rdma.EvCMSendReq },
	func(e *rdma.Event, c *bench.Conn) bool {
		return serverID(e, c) && cmEvent(e, rdma.EvCMEventHandler, cmConnectRequest)
	},
	func(e *rdma.Event, c *bench.Conn) bool { return qpTo(e, c.Server.TID, rdma.QPStateRTS) },
	func(e *rdma.Event, c *bench.Conn) bool { return serverID(e, c) && e.Kind == rdma.EvCMSendRep },
	func(e *rdma.Event, c *bench.Conn) bool { return qpTo(e, c.Client.TID, rdma.QPStateRTS) },
	func(e *rdma.Event, c *bench.Conn) bool { return clientID(e, c) && e.Kind == rdma.EvCMSendRTU },
	func(e *rdma.Event, c *bench.Conn) bool {
		return serverID(e, c) && cmEvent(e, rdma.EvCMEventHandler, cmEstablished)
	},
}

// stepEnd is the end of the client's step of that name, 0 if it has none.
func stepEnd(s *bench.Side, name string) int64 {
	for _, st := range s.Steps {
		if st.Name == name {
			return st.Start + st.Dur
		}
	}
	return 0
}

// Connections splits each connection into Phases from the traced events
// (events sorted by time or not) and the program's own steps.
func Connections(conns []bench.Conn, events []rdma.Event) ConnResult {
	sorted := make([]rdma.Event, len(events))
	copy(sorted, events)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Mono < sorted[j].Mono })
	res := ConnResult{SumOK: true}
	for ci := range conns {
		c := &conns[ci]
		cp := ConnPhases{Index: c.Index, Start: c.Start, Total: c.End - c.Start}
		ends := make([]int64, len(Phases))
		found := make([]bool, len(Phases))
		// Milestones in order, each searched after the previous one found.
		from := sort.Search(len(sorted), func(k int) bool { return int64(sorted[k].Mono) >= c.Start })
		for m, match := range milestones {
			for k := from; k < len(sorted) && int64(sorted[k].Mono) <= c.End; k++ {
				if match(&sorted[k], c) {
					ends[m], found[m], from = int64(sorted[k].Mono), true, k+1
					break
				}
			}
		}
		user := []int64{stepEnd(&c.Client, "connect"), stepEnd(&c.Client, "disconnect"), c.End}
		for i, t := range user {
			m := len(milestones) + i
			ends[m], found[m] = t, t != 0
		}
		// A missing milestone folds its phase into the next; one out of
		// order (clocks of two threads, a late tracepoint) is clamped, so
		// the phases never go negative and always add up.
		prev := c.Start
		for m := len(Phases) - 1; m >= 0; m-- {
			if !found[m] {
				ends[m] = c.End
			}
			if m < len(Phases)-1 && ends[m] > ends[m+1] {
				ends[m] = ends[m+1]
			}
		}
		for m := range Phases {
			if !found[m] {
				cp.Missing = append(cp.Missing, Phases[m])
				if m == 0 {
					ends[m] = c.Start
				} else {
					ends[m] = ends[m-1]
				}
			}
			if ends[m] < prev {
				ends[m] = prev
			}
			cp.Phases = append(cp.Phases, ends[m]-prev)
			prev = ends[m]
		}
		cp.Ends = ends
		var sum int64
		for _, p := range cp.Phases {
			sum += p
		}
		if sum != cp.Total {
			res.SumOK = false
		}
		res.Conns = append(res.Conns, cp)
	}
	var total int64
	for _, c := range res.Conns {
		total += c.Total
	}
	for m, name := range Phases {
		ns := make([]int64, len(res.Conns))
		var sum int64
		for i, c := range res.Conns {
			ns[i] = c.Phases[m]
			sum += ns[i]
		}
		st := PhaseStats{Name: name, Dist: bench.Distribution(ns)}
		if total > 0 {
			st.Share = float64(sum) / float64(total)
		}
		res.Stats = append(res.Stats, st)
	}
	return res
}
