package rdma

import (
	"net/netip"
	"testing"
)

// cmEvent is a cm_event_handler event of an ID from 10.0.0.1 to
// 10.0.0.7:7471, bound to rxe0/1 when bound is set.
func cmEvent(ev CMEvent, status int32, bound bool) *Event {
	e := &Event{Kind: EvCMEventHandler, Flags: EvHasCM | EvHasRes | EvHasOwner, CMEvent: ev, Status: status}
	e.Type = ResCMID
	e.Src = netip.MustParseAddrPort("10.0.0.1:0")
	e.Dst = netip.MustParseAddrPort("10.0.0.7:7471")
	e.Resource.Has |= HasSrcAddr | HasPS
	if bound {
		e.Flags |= EvHasDev
		e.DevName, e.Port = "rxe0", 1
		e.Resource.Has |= HasPort
	}
	return e
}

func TestCMFailureSaysWhatWentWrongForEveryEventAndStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ev     CMEvent
		status int32
		bound  bool
		want   string
	}{
		{"ARP got no answer", CMEvAddrError, -110, false, "no answer for 10.0.0.7:7471: address resolution timed out (no neighbour answered ARP/ND, or no route came up)"},
		{"ARP got no answer on a bound ID", CMEvAddrError, -110, true, "no answer for 10.0.0.7:7471 from rxe0/1: address resolution timed out (no neighbour answered ARP/ND, or no route came up)"},
		{"no route", CMEvAddrError, -101, false, "no route to 10.0.0.7:7471"},
		{"host unreachable", CMEvAddrError, -113, false, "10.0.0.7:7471 is unreachable: the route says so, or its neighbour entry failed"},
		{"no RDMA device on the netdev", CMEvAddrError, -19, false, "no RDMA device on the netdev that reaches 10.0.0.7:7471"},
		{"source address not here", CMEvAddrError, -99, false, "the source address for 10.0.0.7:7471 is not on this host"},
		{"another address error", CMEvAddrError, -22, false, "cannot resolve the address 10.0.0.7:7471: EINVAL"},
		{"path query timed out", CMEvRouteError, -110, true, "no path to 10.0.0.7:7471: the path record query got no answer (subnet manager) from rxe0/1"},
		{"no route for the route", CMEvRouteError, -101, true, "no route to 10.0.0.7:7471 from rxe0/1 (ENETUNREACH)"},
		{"another route error", CMEvRouteError, -22, true, "cannot resolve a route to 10.0.0.7:7471: EINVAL from rxe0/1"},
		{"QP could not move after the reply", CMEvConnectError, -22, true, "connection to 10.0.0.7:7471 failed after the peer answered: EINVAL from rxe0/1"},
		{"REQ retries ran out", CMEvUnreachable, -110, true, "no answer from 10.0.0.7:7471: the connection request or reply timed out from rxe0/1"},
		{"no listener on IB or RoCE", CMRejected, 8, true, "no listener on port 7471 at 10.0.0.7 from rxe0/1 (invalid service ID)"},
		{"no listener on iWARP", CMRejected, -111, true, "no listener on port 7471 at 10.0.0.7 from rxe0/1 (connection refused)"},
		{"MPA reject on iWARP", CMRejected, -104, true, "peer 10.0.0.7:7471 rejected the connection (reset) from rxe0/1"},
		{"the peer's program rejected", CMRejected, 28, true, "peer 10.0.0.7:7471 rejected the connection: consumer defined (its program or its rdma_cm refused it) from rxe0/1"},
		{"the request was dropped", CMRejected, 4, true, "peer 10.0.0.7:7471 dropped the request (timeout: its listener went away or failed it) from rxe0/1"},
		{"a stale connection", CMRejected, 10, true, "peer 10.0.0.7:7471 rejected the connection as stale: it still has one from the same QP from rxe0/1"},
		{"no QP at the peer", CMRejected, 1, true, "peer 10.0.0.7:7471 has no resources for the connection (no QP) from rxe0/1"},
		{"no resources at the peer", CMRejected, 3, true, "peer 10.0.0.7:7471 has no resources for the connection (no resources) from rxe0/1"},
		{"another reason", CMRejected, 26, true, "peer 10.0.0.7:7471 rejected the connection: invalid MTU (26) from rxe0/1"},
		{"a reason the kernel has no name for", CMRejected, 99, true, "peer 10.0.0.7:7471 rejected the connection: unrecognized reason (99) from rxe0/1"},
		{"the device goes away", CMEvDeviceRemoval, 0, true, "device rxe0/1 is being removed: the ID must be destroyed"},
		{"bonding failover", CMEvAddrChange, 0, true, "the address under rxe0/1 moved (bonding failover): the connection to 10.0.0.7:7471 must be remade"},
		{"multicast join failed", CMEvMulticastError, -110, true, "joining the multicast group 10.0.0.7:7471 failed: ETIMEDOUT from rxe0/1"},
		{"a response with an error", CMEvConnectResponse, -22, true, "the connection to 10.0.0.7:7471 failed: EINVAL from rxe0/1"},
		{"established is no failure", CMEvEstablished, 0, true, ""},
		{"address resolved is no failure", CMEvAddrResolved, 0, false, ""},
		{"disconnected is no failure", CMEvDisconnected, 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CMFailure(cmEvent(tc.ev, tc.status, tc.bound)); got != tc.want {
				t.Errorf("CMFailure(%s, %d)\n got %q\nwant %q", tc.ev, tc.status, got, tc.want)
			}
		})
	}
}

func TestCMFailureWithoutAnAddressNamesThePeer(t *testing.T) {
	e := cmEvent(CMRejected, 8, false)
	e.Resource.Has &^= HasSrcAddr
	if got, want := CMFailure(e), "no listener on port 7471 at the peer (invalid service ID)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = cmEvent(rejConsumer, 28, false)
	e.CMEvent = CMRejected
	e.Resource.Has &^= HasSrcAddr
	if got, want := CMFailure(e), "the peer rejected the connection: consumer defined (its program or its rdma_cm refused it)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = cmEvent(CMEvAddrError, -110, false)
	e.Dst = netip.AddrPortFrom(netip.MustParseAddr("fe80::1"), 0)
	if got, want := CMFailure(e), "no answer for fe80::1: address resolution timed out (no neighbour answered ARP/ND, or no route came up)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCMFailureIsEmptyForEventsWithoutACMEvent(t *testing.T) {
	e := cmEvent(CMRejected, 8, true)
	e.Flags &^= EvHasCM
	if got := CMFailure(e); got != "" {
		t.Errorf("got %q for an event without a CM event", got)
	}
}
