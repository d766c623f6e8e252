package ports

import (
	"net/netip"
	"os"
	"path/filepath"
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

// TestHolderLookupKeepsItsSocketIndex: the process holding a port's
// socket is found once in /proc and named from then on from the index the
// lookup keeps (here /proc's files can no longer be read after the first
// lookup, and the holder is still named), with one scan for 1 000 events.
// Before, each event read every process's open files anew, with a fresh
// Enricher: 6.5 ms a lookup on an idle host, 330 ms with 19 000 open
// files, on the ring reader's path.
func TestHolderLookupKeepsItsSocketIndex(t *testing.T) {
	root := t.TempDir()
	fd := filepath.Join(root, "300", "fd")
	if err := os.MkdirAll(fd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[9001]", filepath.Join(fd, "3")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "300", "comm"), []byte("python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held := []sockdiag.Socket{{Proto: "tcp", State: sockdiag.Listen, Src: netip.MustParseAddrPort("0.0.0.0:7400"), Inode: 9001}}
	now := time.Unix(1000, 0)
	h := &HolderLookup{reuse: time.Second, least: 100 * time.Millisecond, now: func() time.Time { return now },
		gather: func() (Input, error) { return Input{Sockets: held}, nil }, procs: newHolderProcs(root)}
	busy := &rdma.Event{Kind: rdma.EvPortBusy, Resource: rdma.Resource{Src: netip.MustParseAddrPort("10.0.0.1:7400")}}
	want := "python3[300] tcp LISTEN 0.0.0.0:7400"
	if got := h.Names(busy); len(got) != 1 || got[0] != want {
		t.Fatalf("holders %q, want %q", got, want)
	}
	if err := os.RemoveAll(fd); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		now = now.Add(10 * time.Millisecond)
		if got := h.Names(busy); len(got) != 1 || got[0] != want {
			t.Fatalf("lookup %d: holders %q, want %q from the index", i+2, got, want)
		}
	}
	if n := h.procs.(*holderProcs).index.Scans(); n != 1 {
		t.Errorf("%d scans of /proc for 1001 lookups of one holder, want 1", n)
	}
}
