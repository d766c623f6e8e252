package ports

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// TestHolderDumpsAreRateLimited: port-busy events of a program that loops
// on a failing bind share one dump per second while the dump names a
// holder; a conflict whose holder the last dump lacks (a new listener)
// dumps again, but not more often than every 100 ms.
func TestHolderDumpsAreRateLimited(t *testing.T) {
	now := time.Unix(1000, 0)
	held := []sockdiag.Socket{{Proto: "tcp", State: sockdiag.Listen, Src: netip.MustParseAddrPort("0.0.0.0:7400")}}
	h := &HolderLookup{reuse: time.Second, least: 100 * time.Millisecond, now: func() time.Time { return now },
		gather: func() (Input, error) { return Input{Sockets: held}, nil }}
	busy := func(port uint16) *rdma.Event {
		return &rdma.Event{Kind: rdma.EvPortBusy, Resource: rdma.Resource{Src: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), port)}}
	}
	for range 1000 { // a thousand failures within 0.5 s
		if h := h.Names(busy(7400)); len(h) != 1 {
			t.Fatalf("holders %q, want the listener", h)
		}
		now = now.Add(500 * time.Microsecond)
	}
	if n := h.dumps; n != 1 {
		t.Fatalf("%d dumps for 1000 lookups in 0.5 s, want 1", n)
	}
	// A new conflict on a port the dump has no holder of: a new dump,
	// once 100 ms have passed since the last.
	h.Names(busy(7500))
	if n := h.dumps; n != 2 {
		t.Errorf("%d dumps for a port the last dump has no holder of, want 2", n)
	}
	for range 50 {
		h.Names(busy(7500))
		now = now.Add(time.Millisecond)
	}
	if n := h.dumps; n != 2 {
		t.Errorf("%d dumps for 50 more lookups in 50 ms, want still 2", n)
	}
	now = now.Add(100 * time.Millisecond)
	h.Names(busy(7500))
	if n := h.dumps; n != 3 {
		t.Errorf("%d dumps 100 ms later, want 3", n)
	}
	now = now.Add(2 * time.Second)
	h.Names(busy(7400))
	if n := h.dumps; n != 4 {
		t.Errorf("%d dumps after the second passed, want 4", n)
	}
}
