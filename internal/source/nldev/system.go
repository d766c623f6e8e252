package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// DialNetNS opens the RDMA netlink socket in the network namespace open
// at fd: the kernel answers a socket from the namespace it was made in,
// and in exclusive mode shows there only that namespace's devices.
// mdlayher/netlink makes the socket on a locked thread moved into fd.
func DialNetNS(fd int) (*Client, error) {
	conn, err := netlink.Dial(familyRDMA, &netlink.Config{NetNS: fd})
	if err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			return nil, ErrNoRDMA
		}
		return nil, fmt.Errorf("open RDMA netlink socket in the network namespace: %w", err)
	}
	return &Client{conn: conn, netAdmin: hasNetAdmin()}, nil
}

// System reads the subsystem's settings (SYS_GET).
func (c *Client) System() (rdma.System, error) {
	msgs, err := c.request(cmdSysGet, 0, nil)
	if err != nil {
		return rdma.System{}, fmt.Errorf("read the RDMA system settings: %w", err)
	}
	if len(msgs) != 1 {
		return rdma.System{}, fmt.Errorf("read the RDMA system settings: %d replies, want 1", len(msgs))
	}
	return DecodeSystem(msgs[0].Data)
}

// DecodeSystem decodes a SYS_GET reply.
func DecodeSystem(data []byte) (rdma.System, error) {
	var s rdma.System
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return s, fmt.Errorf("system: %w", err)
	}
	flag := func() *bool { on := ad.Uint8() != 0; return &on }
	for ad.Next() {
		switch ad.Type() {
		case attrSysNetNSMode:
			switch m := ad.Uint8(); m {
			case 0:
				s.NetNSMode = "exclusive"
			case 1:
				s.NetNSMode = "shared"
			default:
				s.NetNSMode = fmt.Sprintf("unknown(%d)", m)
			}
		case attrSysCopyOnFork:
			s.CopyOnFork = flag()
		case attrSysPrivilegedQKey:
			s.PrivilegedQKey = flag()
		case attrSysMonitorMode:
			s.Monitor = flag()
		}
	}
	if err := ad.Err(); err != nil {
		return s, fmt.Errorf("system: %w", err)
	}
	return s, nil
}

// SetNetNSMode switches the netns mode (SYS_SET; needs CAP_NET_ADMIN in
// the initial namespace). The kernel refuses while any network namespace
// other than the initial one exists.
func (c *Client) SetNetNSMode(mode string) error {
	var v uint8
	switch mode {
	case "exclusive":
		v = 0
	case "shared":
		v = 1
	default:
		return fmt.Errorf("netns mode %q: want shared or exclusive", mode)
	}
	_, err := c.request(cmdSysSet, netlink.Acknowledge, func(ae *netlink.AttributeEncoder) {
		ae.Uint8(attrSysNetNSMode, v)
	})
	if err != nil {
		return fmt.Errorf("set the RDMA netns mode to %s: %w", mode, err)
	}
	return nil
}
