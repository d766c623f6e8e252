package ports

import (
	"net/netip"
	"testing"
)

func TestOverlaps(t *testing.T) {
	a := netip.MustParseAddr
	for _, tc := range []struct {
		x, y string
		want bool
	}{
		{"10.0.0.1", "10.0.0.1", true}, {"10.0.0.1", "10.0.0.2", false}, {"0.0.0.0", "10.0.0.2", true},
		{"::", "10.0.0.2", true}, {"0.0.0.0", "fe80::1", false}, {"::ffff:10.0.0.1", "10.0.0.1", true},
	} {
		if got := overlaps(a(tc.x), a(tc.y)); got != tc.want {
			t.Errorf("overlaps(%s, %s) = %v", tc.x, tc.y, got)
		}
	}
}
