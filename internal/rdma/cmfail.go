package rdma

import (
	"net/netip"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The rdma_cm events that say a connection or a resolution failed, or
// that the ID lost what it stood on (enum rdma_cm_event_type).
const (
	CMEvAddrResolved    CMEvent = 0
	CMEvAddrError       CMEvent = 1
	CMEvRouteResolved   CMEvent = 2
	CMEvRouteError      CMEvent = 3
	CMEvConnectResponse CMEvent = 5
	CMEvConnectError    CMEvent = 6
	CMEvUnreachable     CMEvent = 7
	CMEvEstablished     CMEvent = 9
	CMEvDisconnected    CMEvent = 10
	CMEvDeviceRemoval   CMEvent = 11
	CMEvMulticastError  CMEvent = 13
	CMEvAddrChange      CMEvent = 14
)

// IB CM reject reasons (enum ib_cm_rej_reason) that CMFailure words
// apart from the rest.
const (
	rejNoQP           = 1
	rejNoResources    = 3
	rejTimeout        = 4
	rejInvalidService = 8
	rejStaleConn      = 10
	rejConsumer       = 28
)

// IsCMError says whether an rdma_cm event reports a failure: one of the
// error events, or any event with a non-zero status (a CONNECT_RESPONSE
// whose QP could not be moved, for one).
func IsCMError(ev CMEvent, status int32) bool {
	switch ev {
	case CMEvAddrError, CMEvRouteError, CMEvConnectError, CMEvUnreachable, CMRejected, CMEvDeviceRemoval, CMEvMulticastError, CMEvAddrChange:
		return true
	}
	return status != 0
}

// CMFailure says in words what an rdma_cm event (cm_event_handler or
// cm_event_done) that reports a failure means, for a person on call: the
// address tried, the device and port when the ID was bound to one. It is
// "" for an event that reports none. The statuses are those
// drivers/infiniband/core/cma.c delivers with each event (Linux 5.10 to
// 6.18); librdmacm hands them to the program unchanged (rdma_get_cm_event,
// event->status), which is what rping prints as "error N".
func CMFailure(e *Event) string {
	if !e.Has(EvHasCM) || !IsCMError(e.CMEvent, e.Status) {
		return ""
	}
	peer := peerText(e)
	on := onDevice(e)
	errno := errnoOf(e.Status)
	switch e.CMEvent {
	case CMEvAddrError:
		// addr_handler(): the status of rdma_resolve_ip()'s request
		// (core/addr.c), or of binding the source address to a device.
		switch errno {
		case unix.ETIMEDOUT:
			// process_one_req(): the neighbour (ARP, ND) never resolved
			// within the caller's timeout.
			return "no answer for " + peer + on + ": address resolution timed out (no neighbour answered ARP/ND, or no route came up)"
		case unix.ENETUNREACH:
			return "no route to " + peer + on
		case unix.EHOSTUNREACH:
			return peer + " is unreachable: the route says so, or its neighbour entry failed" + on
		case unix.ENODEV:
			// cma_acquire_dev_by_src_ip(): the netdev the route leaves
			// by has no RDMA device (no rxe/siw link on it, or not up).
			return "no RDMA device on the netdev that reaches " + peer
		case unix.EADDRNOTAVAIL:
			return "the source address for " + peer + " is not on this host"
		}
		return "cannot resolve the address " + peer + ": " + statusWord(e) + on
	case CMEvRouteError:
		// cma_query_handler() (IB: the SA's path record query) or
		// cma_work_handler() (RoCE, iWARP).
		switch errno {
		case unix.ETIMEDOUT:
			return "no path to " + peer + ": the path record query got no answer (subnet manager)" + on
		case unix.ENETUNREACH, unix.EHOSTUNREACH, unix.ENODEV:
			return "no route to " + peer + on + " (" + statusWord(e) + ")"
		}
		return "cannot resolve a route to " + peer + ": " + statusWord(e) + on
	case CMEvConnectError:
		// cma_ib_handler(): the reply arrived, but cma_rep_recv() could
		// not move the QP to RTR or RTS; iWARP: cma_iw_handler() for a
		// connect reply with any other error.
		return "connection to " + peer + " failed after the peer answered: " + statusWord(e) + on
	case CMEvUnreachable:
		// IB_CM_REQ_ERROR / IB_CM_REP_ERROR: the REQ or REP was resent
		// until its retries ran out (status -ETIMEDOUT); iWARP: the TCP
		// connect timed out.
		return "no answer from " + peer + ": the connection request or reply timed out" + on
	case CMRejected:
		return rejectWords(e, peer, on)
	case CMEvDeviceRemoval:
		return "device " + devText(e) + " is being removed: the ID must be destroyed"
	case CMEvAddrChange:
		// cma_netdev_callback(): the bonding master's active slave
		// changed under the bound address.
		return "the address under " + devText(e) + " moved (bonding failover): the connection to " + peer + " must be remade"
	case CMEvMulticastError:
		return "joining the multicast group " + peer + " failed: " + statusWord(e) + on
	}
	return "the connection to " + peer + " failed: " + statusWord(e) + on
}

// rejectWords is REJECTED in words: on IB and RoCE the status is the
// reject reason of the peer's REJ (cma_ib_handler(), IB_CM_REJ_RECEIVED);
// on iWARP it is an errno (cma_iw_handler(): -ECONNREFUSED when no one
// listens, -ECONNRESET when the peer's MPA reply rejects).
func rejectWords(e *Event, peer, on string) string {
	port := "port " + strconv.Itoa(int(e.Dst.Port())) + " at " + addrOnly(e)
	switch e.Status {
	case rejInvalidService:
		// cm_match_req(): the peer's CM has no listener for the service
		// ID, which rdma_cm makes of the port space and port.
		return "no listener on " + port + on + " (invalid service ID)"
	case -int32(unix.ECONNREFUSED):
		return "no listener on " + port + on + " (connection refused)"
	case -int32(unix.ECONNRESET):
		return peerWho(peer) + " rejected the connection (reset)" + on
	case rejConsumer:
		// rdma_reject() by the peer's program, or its rdma_cm refusing
		// the request before the program saw it (no listener on that
		// address, a QP type that does not match).
		return peerWho(peer) + " rejected the connection: consumer defined (its program or its rdma_cm refused it)" + on
	case rejTimeout:
		// cm_destroy_id() of a request still being processed: the
		// listener went away or returned an error for it.
		return peerWho(peer) + " dropped the request (timeout: its listener went away or failed it)" + on
	case rejStaleConn:
		return peerWho(peer) + " rejected the connection as stale: it still has one from the same QP" + on
	case rejNoQP, rejNoResources:
		return peerWho(peer) + " has no resources for the connection (" + CMStatusName(e.CMEvent, e.Status) + ")" + on
	}
	return peerWho(peer) + " rejected the connection: " + statusWord(e) + on
}

// statusWord names a status as CMStatusName does, with its number when
// the name is not the number itself.
func statusWord(e *Event) string {
	n := CMStatusName(e.CMEvent, e.Status)
	num := strconv.Itoa(int(e.Status))
	if n == "" || n == num {
		return "status " + num
	}
	if e.Status < 0 {
		return n
	}
	return n + " (" + num + ")"
}

func errnoOf(status int32) syscall.Errno {
	if status < 0 {
		return syscall.Errno(-status)
	}
	return 0
}

// peerText is the address the ID tried: "10.0.0.7:7471", "10.0.0.7"
// without a port, "the peer" when the event carries none.
func peerText(e *Event) string {
	if !e.Given(HasSrcAddr) || !e.Dst.IsValid() || e.Dst.Addr().IsUnspecified() {
		return "the peer"
	}
	if e.Dst.Port() == 0 {
		return e.Dst.Addr().String()
	}
	return netip.AddrPortFrom(e.Dst.Addr().Unmap(), e.Dst.Port()).String()
}

// peerWho is "peer 10.0.0.7:7471", or "the peer" when its address is unknown.
func peerWho(peer string) string {
	if peer == "the peer" {
		return peer
	}
	return "peer " + peer
}

func addrOnly(e *Event) string {
	if !e.Given(HasSrcAddr) || !e.Dst.IsValid() || e.Dst.Addr().IsUnspecified() {
		return "the peer"
	}
	return e.Dst.Addr().Unmap().String()
}

// onDevice is " from rxe0/1" when the ID was bound to a device (after an
// address resolution found one), else "".
func onDevice(e *Event) string {
	if !e.Has(EvHasDev) || e.DevName == "" {
		return ""
	}
	return " from " + devText(e)
}

func devText(e *Event) string {
	if e.DevName == "" {
		return "?"
	}
	if e.Given(HasPort) && e.Port != 0 {
		return e.DevName + "/" + strconv.Itoa(int(e.Port))
	}
	return e.DevName
}
