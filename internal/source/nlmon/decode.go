// Package nlmon reads the RDMA netlink monitor group (RDMA_NL_GROUP_NOTIFY,
// Linux 6.12+): the kernel's device events, what iproute2's `rdma monitor`
// shows (device registered and unregistered, a port's net device attached
// and detached, a device or net device renamed), as rdma events.
package nlmon

import (
	"fmt"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Numbers from include/uapi/rdma/rdma_netlink.h.
const (
	familyRDMA  = 20 // NETLINK_RDMA
	clientNLDEV = 5  // RDMA_NL_NLDEV
	cmdMonitor  = 28 // RDMA_NLDEV_CMD_MONITOR
	groupNotify = 4  // RDMA_NL_GROUP_NOTIFY

	attrDevIndex  = 1   // u32
	attrDevName   = 2   // string
	attrPortIndex = 3   // u32
	attrNdevIndex = 50  // u32
	attrNdevName  = 51  // string
	attrEventType = 102 // u8, enum rdma_nl_notify_event_type
)

// MonitorType is the netlink message type of a monitor event.
const MonitorType = netlink.HeaderType(clientNLDEV<<10 | cmdMonitor)

// eventKinds maps enum rdma_nl_notify_event_type to rdma's kinds.
// UNREGISTER is sent once the device's clients are gone
// (ib_unregister_device after disable_device): its unregistration has
// finished as far as its users can tell.
var eventKinds = [...]rdma.EventKind{
	0: rdma.EvDevRegister,     // RDMA_REGISTER_EVENT
	1: rdma.EvDevUnregistered, // RDMA_UNREGISTER_EVENT
	2: rdma.EvNetdevAttach,    // RDMA_NETDEV_ATTACH_EVENT
	3: rdma.EvNetdevDetach,    // RDMA_NETDEV_DETACH_EVENT
	4: rdma.EvDevRename,       // RDMA_RENAME_EVENT
	5: rdma.EvNetdevRename,    // RDMA_NETDEV_RENAME_EVENT
}

// Decode reads one monitor message's attributes into ev (its Time is
// left to the caller: the message carries none). A message that is not
// a monitor event, or lacks what its type carries, is an error saying
// what was expected.
func Decode(typ netlink.HeaderType, data []byte, ev *rdma.Event) error {
	*ev = rdma.Event{}
	if typ != MonitorType {
		return fmt.Errorf("monitor: message type %#x, expected %#x (RDMA_NLDEV_CMD_MONITOR)", uint16(typ), uint16(MonitorType))
	}
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	kind := -1
	var hasIndex, hasName, hasNdevIdx bool
	for ad.Next() {
		switch ad.Type() {
		case attrEventType:
			kind = int(ad.Uint8())
		case attrDevIndex:
			ev.DevIndex, hasIndex = ad.Uint32(), true
		case attrDevName:
			ev.DevName, hasName = ad.String(), true
		case attrPortIndex:
			ev.Port, ev.Resource.Has = ad.Uint32(), ev.Resource.Has|rdma.HasPort
		case attrNdevIndex:
			hasNdevIdx = true // the event has no field for it: the name says it
		case attrNdevName:
			ev.Netdev, ev.Resource.Has = ad.String(), ev.Resource.Has|rdma.HasNetdev
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	if kind < 0 || kind >= len(eventKinds) {
		if kind < 0 {
			return fmt.Errorf("monitor: no event type (RDMA_NLDEV_ATTR_EVENT_TYPE)")
		}
		return fmt.Errorf("monitor: event type %d, expected 0 to %d (register to netdev rename)", kind, len(eventKinds)-1)
	}
	ev.Kind = eventKinds[kind]
	switch {
	case ev.Kind == rdma.EvNetdevRename:
		if !hasNdevIdx || !ev.Given(rdma.HasNetdev) {
			return fmt.Errorf("monitor: %s without the net device's index and name", ev.Kind)
		}
	case !hasIndex || !hasName:
		return fmt.Errorf("monitor: %s without the device's index and name", ev.Kind)
	case (ev.Kind == rdma.EvNetdevAttach || ev.Kind == rdma.EvNetdevDetach) && !ev.Given(rdma.HasPort):
		return fmt.Errorf("monitor: %s without the port", ev.Kind)
	}
	if hasIndex {
		ev.Flags |= rdma.EvHasDev
	}
	return nil
}
