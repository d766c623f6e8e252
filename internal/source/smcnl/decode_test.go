package smcnl

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

// msg builds a dump message as the kernel does: a genlmsghdr, then one
// nested attribute of type typ holding what fill encodes.
func msg(t testing.TB, cmd uint8, typ uint16, fill func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(typ, func(nae *netlink.AttributeEncoder) error { fill(nae); return nil })
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{cmd, 1, 0, 0}, b...)
}

// lgrMsg and linkMsg are what 6.12 sent for the SMC-Rv2 link group over
// rxe0 (iwarp-smc.md, smc2-6.12-b), link uid bytes made up.
func lgrMsg(t testing.TB) []byte {
	return msg(t, 2, genLgrSMCR, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(lgrID, 512)
		ae.Uint32(lgrConns, 1)
		ae.Uint8(lgrRole, 0)
		ae.Uint8(lgrType, 1)
		ae.Uint8(lgrVLAN, 0)
		ae.String(lgrPNetID, "RXEPNET         ")
		ae.Nested(lgrV2Common, func(n *netlink.AttributeEncoder) error {
			n.Uint8(v2Ver, 2)
			n.Uint8(v2Rel, 1)
			n.Uint8(v2OS, 3)
			n.String(v2PeerHost, "guest                           ")
			n.String(v2NegEID, "SEEDLAB-TEST                    ")
			return nil
		})
		ae.Uint64(lgrNetCookie, 1)
	})
}

func linkMsg(t testing.TB, id uint8, state uint32) []byte {
	return msg(t, 3, genLinkSMCR, func(ae *netlink.AttributeEncoder) {
		ae.Uint8(linkID, id)
		ae.Uint32(linkState, state)
		ae.Uint32(linkConns, 1)
		ae.Uint8(linkPort, 1)
		ae.Uint32(linkNetDev, 3)
		ae.String(linkDev, "rxe0")
		ae.String(linkGID, "0000:0000:0000:0000:0000:ffff:0a63:0001")
		ae.String(linkPeerGID, "0000:0000:0000:0000:0000:ffff:0a63:0001")
		ae.Uint32(linkUID, ne.Uint32([]byte{0xde, 0xad, 0x02, 0x01}))
		ae.Uint32(linkPeerUID, ne.Uint32([]byte{0xbe, 0xef, 0x02, 0x01}))
	})
}

func TestDecodeLinkGroups(t *testing.T) {
	got, err := DecodeLinkGroups([][]byte{lgrMsg(t), linkMsg(t, 1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	want := []LinkGroup{{ID: 512, Role: "client", Type: "single", PNetID: "RXEPNET", Conns: 1, NetCookie: 1,
		V2: &V2{Version: 2, Release: 1, OS: 3, NegotiatedEID: "SEEDLAB-TEST", PeerHost: "guest"},
		Links: []Link{{ID: 1, Dev: "rxe0", Port: 1, GID: "0000:0000:0000:0000:0000:ffff:0a63:0001",
			PeerGID: "0000:0000:0000:0000:0000:ffff:0a63:0001", Conns: 1, NetDev: 3, UID: "dead0201", PeerUID: "beef0201", State: "activating"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestDecodeLinkGroupsBadInput: each bad message is named, and the rest
// is still read.
func TestDecodeLinkGroupsBadInput(t *testing.T) {
	short := linkMsg(t, 9, 3)
	short = short[:len(short)-3] // cut inside the last attribute
	got, err := DecodeLinkGroups([][]byte{linkMsg(t, 7, 3), {2, 1}, lgrMsg(t), short, linkMsg(t, 2, 3),
		msg(t, 6, genDevSMCR, func(ae *netlink.AttributeEncoder) { ae.String(devIBName, "rxe0") })})
	if len(got) != 1 || len(got[0].Links) != 1 || got[0].Links[0].ID != 2 {
		t.Errorf("got %+v, want the link group with link 2", got)
	}
	for _, w := range []string{
		"message 1 of the link group dump: link 7 on rxe0 before any link group",
		"message 2 of the link group dump: message of 2 bytes",
		"message 4 of the link group dump",
		"message 6 of the link group dump: attribute 6, want a link group (2) or a link (3)",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want it to say %q", err, w)
		}
	}
}

func devMsg(t testing.TB) []byte {
	return msg(t, 6, genDevSMCR, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(devUseCnt, 1)
		ae.Uint8(devIsCrit, 1)
		ae.String(devIBName, "rxe0")
		ae.Nested(devPort, func(n *netlink.AttributeEncoder) error {
			n.Uint8(portPNetUsr, 1)
			n.String(portPNetID, "RXEPNET")
			n.Uint32(portNetDev, 3)
			n.Uint8(portValid, 1)
			n.Uint8(portState, 1)
			n.Uint32(portLnkCnt, 1)
			return nil
		})
	})
}

func TestDecodeDevices(t *testing.T) {
	got, err := DecodeDevices([][]byte{devMsg(t), lgrMsg(t)})
	want := []Device{{Name: "rxe0", Links: 1, Critical: true,
		Ports: []DevicePort{{Port: 1, PNetID: "RXEPNET", PNetByUser: true, NetDev: 3, Active: true, Valid: true, Links: 1}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "message 2 of the device dump: attribute 2, want a device (6)") {
		t.Errorf("error %v, want message 2 named", err)
	}
}

// FuzzDecodeLinkGroups: any bytes give link groups and an error, never a
// panic; a message the decoder could not read at all is named.
func FuzzDecodeLinkGroups(f *testing.F) {
	f.Add(lgrMsg(f), linkMsg(f, 1, 2))
	f.Add([]byte{2, 1, 0, 0}, []byte{3, 1, 0, 0, 4, 0, 3, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		gs, err := DecodeLinkGroups([][]byte{a, b})
		if len(gs) > 2 {
			t.Errorf("%d link groups from 2 messages", len(gs))
		}
		if len(a) < genlHdrLen && (err == nil || !strings.Contains(err.Error(), "message 1 ")) {
			t.Errorf("a %d-byte message 1 is not named in %v", len(a), err)
		}
		ds, _ := DecodeDevices([][]byte{a, b})
		if len(ds) > 2 {
			t.Errorf("%d devices from 2 messages", len(ds))
		}
	})
}

// A device message that does not decode is named and left out, not shown
// half read; found by FuzzDecodeDevices.
func TestDecodeDevicesLeavesOutABadDevice(t *testing.T) {
	bad := msg(t, 6, genDevSMCR, func(ae *netlink.AttributeEncoder) {
		ae.String(devIBName, "mlx5_0")
		ae.Uint16(devUseCnt, 1) // not a u32
	})
	got, err := DecodeDevices([][]byte{bad, devMsg(t)})
	if len(got) != 1 || got[0].Name != "rxe0" {
		t.Errorf("got %+v, want rxe0 alone", got)
	}
	if err == nil || !strings.Contains(err.Error(), `message 1 of the device dump ("mlx5_0"): netlink: attribute 1 is not a uint32`) {
		t.Errorf("error %v, want message 1 named", err)
	}
}
