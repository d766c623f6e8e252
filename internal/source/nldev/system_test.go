package nldev

import (
	"testing"

	"github.com/mdlayher/netlink"
)

func TestDecodeSystem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     uint8
		withMore bool
		want     string
	}{
		{"6.1: shared, copy-on-fork", 1, false, "shared cof=true pqkey=<nil>"},
		{"6.12: exclusive and every flag", 0, true, "exclusive cof=true pqkey=false"},
		{"a mode from the future", 7, false, "unknown(7) cof=true pqkey=<nil>"},
	} {
		ae := netlink.NewAttributeEncoder()
		ae.Uint8(attrSysNetNSMode, tc.mode)
		ae.Uint8(attrSysCopyOnFork, 1)
		if tc.withMore {
			ae.Uint8(attrSysPrivilegedQKey, 0)
			ae.Uint8(attrSysMonitorMode, 1)
		}
		b, err := ae.Encode()
		if err != nil {
			t.Fatal(err)
		}
		s, err := DecodeSystem(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		pq := "<nil>"
		if s.PrivilegedQKey != nil {
			pq = map[bool]string{true: "true", false: "false"}[*s.PrivilegedQKey]
		}
		got := s.NetNSMode + " cof=" + map[bool]string{true: "true", false: "false"}[*s.CopyOnFork] + " pqkey=" + pq
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if tc.withMore && (s.Monitor == nil || !*s.Monitor) {
			t.Errorf("%s: monitor mode not read", tc.name)
		}
	}
	if _, err := DecodeSystem([]byte{1, 2, 3}); err == nil {
		t.Error("a truncated attribute was accepted")
	}
}
