package rdma

import "testing"

// A span's and an off-CPU spell's lengths are each their own part's: an
// event of one kind never reads the other's, and an instant event has none
// whatever its parts hold.
func TestLengthAndEndAreTheKindsOwn(t *testing.T) {
	parts := func(k EventKind) Event {
		return Event{Mono: 1000, Kind: k, Flags: EvHasDur, Span: Span{Func: "ib_umem_get", Dur: 5}, OffCPU: OffCPU{Dur: 7}}
	}
	for _, c := range []struct {
		kind EventKind
		len  uint64
	}{{EvSpan, 5}, {EvOffCPU, 7}, {EvCreate, 0}, {EvPortBusy, 0}} {
		e := parts(c.kind)
		if got := e.Length(); got != c.len {
			t.Errorf("%s: length %d, want %d", c.kind, got, c.len)
		}
		if got := e.End(); got != 1000+c.len {
			t.Errorf("%s: end %d, want %d", c.kind, got, 1000+c.len)
		}
	}
}
