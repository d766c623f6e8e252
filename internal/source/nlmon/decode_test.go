package nlmon

import (
	"strings"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// monMsg is a monitor message as rdma_nl_notify_event builds it.
func monMsg(t testing.TB, attrs func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	attrs(ae)
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMonitorMessagesDecodeAsRdmaMonitorShowsThem(t *testing.T) {
	dev := func(typ uint8) func(*netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			ae.Uint8(attrEventType, typ)
			ae.Uint32(attrDevIndex, 3)
			ae.String(attrDevName, "rxe1")
		}
	}
	port := func(typ uint8) func(*netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			dev(typ)(ae)
			ae.Uint32(attrPortIndex, 1)
			ae.Uint32(attrNdevIndex, 7)
			ae.String(attrNdevName, "veth1")
		}
	}
	for _, tc := range []struct {
		name  string
		attrs func(*netlink.AttributeEncoder)
		want  rdma.Event
	}{
		{"a registration names the device", dev(0), rdma.Event{Kind: rdma.EvDevRegister, Flags: rdma.EvHasDev, Resource: rdma.Resource{DevIndex: 3, DevName: "rxe1"}}},
		{"an unregistration is the end of one", dev(1), rdma.Event{Kind: rdma.EvDevUnregistered, Flags: rdma.EvHasDev, Resource: rdma.Resource{DevIndex: 3, DevName: "rxe1"}}},
		{"an attach names the port and its net device", port(2), rdma.Event{Kind: rdma.EvNetdevAttach, Flags: rdma.EvHasDev,
			Resource: rdma.Resource{DevIndex: 3, DevName: "rxe1", Port: 1, Netdev: "veth1", Has: rdma.HasPort | rdma.HasNetdev}}},
		{"a detach too", port(3), rdma.Event{Kind: rdma.EvNetdevDetach, Flags: rdma.EvHasDev,
			Resource: rdma.Resource{DevIndex: 3, DevName: "rxe1", Port: 1, Netdev: "veth1", Has: rdma.HasPort | rdma.HasNetdev}}},
		{"a rename gives the new name", dev(4), rdma.Event{Kind: rdma.EvDevRename, Flags: rdma.EvHasDev, Resource: rdma.Resource{DevIndex: 3, DevName: "rxe1"}}},
		{"a net device's rename has no RDMA device", func(ae *netlink.AttributeEncoder) {
			ae.Uint8(attrEventType, 5)
			ae.Uint32(attrNdevIndex, 7)
			ae.String(attrNdevName, "eth9")
		}, rdma.Event{Kind: rdma.EvNetdevRename, Resource: rdma.Resource{Netdev: "eth9", Has: rdma.HasNetdev}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev rdma.Event
			if err := Decode(MonitorType, monMsg(t, tc.attrs), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tc.want.Kind || ev.Flags != tc.want.Flags || ev.DevIndex != tc.want.DevIndex || ev.DevName != tc.want.DevName ||
				ev.Port != tc.want.Port || ev.Netdev != tc.want.Netdev || ev.Resource.Has != tc.want.Resource.Has {
				t.Errorf("got %+v\nwant %+v", ev, tc.want)
			}
		})
	}
}

func TestBadMonitorMessagesSayWhatWasExpected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   netlink.HeaderType
		attrs func(*netlink.AttributeEncoder)
		want  string
	}{
		{"another command", clientNLDEV<<10 | 1, func(ae *netlink.AttributeEncoder) { ae.Uint8(attrEventType, 0) }, "expected 0x141c (RDMA_NLDEV_CMD_MONITOR)"},
		{"no event type", MonitorType, func(ae *netlink.AttributeEncoder) { ae.Uint32(attrDevIndex, 1) }, "no event type"},
		{"an event type from a newer kernel", MonitorType, func(ae *netlink.AttributeEncoder) { ae.Uint8(attrEventType, 9) }, "event type 9, expected 0 to 5"},
		{"a registration without its device", MonitorType, func(ae *netlink.AttributeEncoder) { ae.Uint8(attrEventType, 0) }, "dev_register without the device's index and name"},
		{"an attach without its port", MonitorType, func(ae *netlink.AttributeEncoder) {
			ae.Uint8(attrEventType, 2)
			ae.Uint32(attrDevIndex, 1)
			ae.String(attrDevName, "rxe0")
		}, "netdev-attach without the port"},
		{"a net device's rename without its name", MonitorType, func(ae *netlink.AttributeEncoder) { ae.Uint8(attrEventType, 5) }, "without the net device's index and name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev rdma.Event
			err := Decode(tc.typ, monMsg(t, tc.attrs), &ev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	var ev rdma.Event
	if err := Decode(MonitorType, []byte{1, 2, 3}, &ev); err == nil {
		t.Error("a truncated attribute decoded")
	}
}

// FuzzDecode: a monitor message of any bytes decodes or is an error,
// never a panic, and a decoded one is a device event.
func FuzzDecode(f *testing.F) {
	f.Add(monMsg(f, func(ae *netlink.AttributeEncoder) {
		ae.Uint8(attrEventType, 2)
		ae.Uint32(attrDevIndex, 1)
		ae.String(attrDevName, "rxe0")
		ae.Uint32(attrPortIndex, 1)
		ae.Uint32(attrNdevIndex, 2)
		ae.String(attrNdevName, "eth0")
	}))
	f.Add(monMsg(f, func(ae *netlink.AttributeEncoder) { ae.Uint8(attrEventType, 5) }))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev rdma.Event
		if err := Decode(MonitorType, data, &ev); err == nil && !ev.Kind.IsDevice() {
			t.Errorf("decoded %s, not a device event", ev.Kind)
		}
	})
}
