package rdma

import (
	"net/netip"
	"strings"
	"testing"
)

// Each setting in words, with the time or size it means.
func TestQPAttrWords(t *testing.T) {
	for _, c := range []struct {
		name string
		a    QPAttr
		want string
	}{
		{"timeout 0 is infinite", QPAttr{Mask: QPMaskTimeout}, "timeout 0 = infinite"},
		{"timeout 14 is 4.096 us times 2^14", QPAttr{Mask: QPMaskTimeout, Timeout: 14}, "timeout 14 = 67.11 ms"},
		{"timeout 18 is about a second", QPAttr{Mask: QPMaskTimeout, Timeout: 18}, "timeout 18 = 1.1 s"},
		{"timeout 31 is hours", QPAttr{Mask: QPMaskTimeout, Timeout: 31}, "timeout 31 = 8796 s"},
		{"timeout 1 is 8 us", QPAttr{Mask: QPMaskTimeout, Timeout: 1}, "timeout 1 = 0.008192 ms"},
		{"min_rnr_timer 0 is the longest", QPAttr{Mask: QPMaskMinRNRTimer}, "min_rnr_timer 0 = 655.36 ms"},
		{"min_rnr_timer 1 is the shortest", QPAttr{Mask: QPMaskMinRNRTimer, MinRNRTimer: 1}, "min_rnr_timer 1 = 0.01 ms"},
		{"min_rnr_timer 31", QPAttr{Mask: QPMaskMinRNRTimer, MinRNRTimer: 31}, "min_rnr_timer 31 = 491.52 ms"},
		{"rnr_retry 7 is infinite", QPAttr{Mask: QPMaskRNRRetry, RNRRetry: 7}, "rnr_retry 7 = infinite"},
		{"rnr_retry 6 is six", QPAttr{Mask: QPMaskRNRRetry, RNRRetry: 6}, "rnr_retry 6"},
		{"path MTU in bytes", QPAttr{Mask: QPMaskPathMTU, PathMTU: 3}, "path_mtu 1024"},
		{"path MTU above what the netdev carries", QPAttr{Mask: QPMaskPathMTU, PathMTU: 4, HasNdev: true, NdevMTU: 1500}, "path_mtu 2048 > 1024 for mtu 1500"},
		{"path MTU a jumbo netdev carries", QPAttr{Mask: QPMaskPathMTU, PathMTU: 5, HasNdev: true, NdevMTU: 9000}, "path_mtu 4096"},
		{"an IPv4 GID on a VLAN", QPAttr{HasGID: true, SGID: netip.MustParseAddr("::ffff:10.0.0.1"), SGIDIndex: 3, GIDType: GIDTypeRoCEv2,
			HasNdev: true, Ndev: "eth0.7", NdevMTU: 9000, HasVLAN: true, VLAN: 7}, "sgid 3 ::ffff:10.0.0.1 RoCE v2 eth0.7 vlan 7 mtu 9000"},
		{"an IB GID", QPAttr{HasGID: true, SGID: netip.MustParseAddr("fe80::1")}, "sgid 0 fe80::1 IB"},
		{"nothing set", QPAttr{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(c.a.Words(), ", "); got != c.want {
				t.Errorf("Words() = %q, want %q", got, c.want)
			}
		})
	}
}

// Each risk, made once on purpose, and not made by the values beside it.
func TestQPAttrRisks(t *testing.T) {
	ll := netip.MustParseAddr("fe80::5054:ff:fe12:3456")
	for _, c := range []struct {
		name string
		a    QPAttr
		want string
	}{
		{"min_rnr_timer 0", QPAttr{Mask: QPMaskMinRNRTimer}, RiskRNRWait},
		{"min_rnr_timer not set is no risk", QPAttr{}, ""},
		{"rnr_retry 7", QPAttr{Mask: QPMaskRNRRetry, RNRRetry: 7}, RiskRNRInfinite},
		{"timeout 0", QPAttr{Mask: QPMaskTimeout}, RiskNoTimeout},
		{"timeout 24", QPAttr{Mask: QPMaskTimeout, Timeout: 24}, RiskLongTimeout},
		{"timeout 7", QPAttr{Mask: QPMaskTimeout, Timeout: 7}, RiskShortTimeout},
		{"timeout 14 is sound", QPAttr{Mask: QPMaskTimeout, Timeout: 14}, ""},
		{"retry_cnt 0", QPAttr{Mask: QPMaskRetryCnt}, RiskNoRetry},
		{"a link-local RoCE v2 GID", QPAttr{HasGID: true, SGID: ll, GIDType: GIDTypeRoCEv2, HasNdev: true, NdevMTU: 1500}, RiskLinkLocalGID},
		{"RoCE v1", QPAttr{HasGID: true, SGID: netip.MustParseAddr("::ffff:10.0.0.1"), GIDType: GIDTypeRoCEv1, HasNdev: true}, RiskRoCEv1},
		{"type 0 on RoCE is v1", QPAttr{HasGID: true, SGID: netip.MustParseAddr("::ffff:10.0.0.1"), HasNdev: true}, RiskRoCEv1},
		{"an IB GID is neither", QPAttr{HasGID: true, SGID: ll}, ""},
		{"path MTU 4096 over 1500", QPAttr{Mask: QPMaskPathMTU, PathMTU: 5, HasNdev: true, NdevMTU: 1500}, RiskMTUAboveNetdev},
		{"path MTU 1024 over 1500", QPAttr{Mask: QPMaskPathMTU, PathMTU: 3, HasNdev: true, NdevMTU: 1500}, ""},
		{"path MTU 4096 over 4200", QPAttr{Mask: QPMaskPathMTU, PathMTU: 5, HasNdev: true, NdevMTU: 4200}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.Join(c.a.Risks(), " "); got != c.want {
				t.Errorf("Risks() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestGIDTypeNamesRoundTrip(t *testing.T) {
	for _, ty := range []GIDType{GIDTypeIB, GIDTypeRoCEv1, GIDTypeRoCEv2} {
		for _, eth := range []bool{false, true} {
			back, err := ParseGIDType(ty.Name(eth))
			if err != nil || back.Name(eth) != ty.Name(eth) {
				t.Errorf("%d (eth %v): %q read back as %v, %v", ty, eth, ty.Name(eth), back, err)
			}
		}
	}
	if _, err := ParseGIDType("RoCE v3"); err == nil {
		t.Error("RoCE v3 read")
	}
}
