package netns

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Addrs lists the IP addresses of every interface in the namespace open
// at path (RTM_GETADDR on a NETLINK_ROUTE socket made there).
func Addrs(path string) ([]netip.Addr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	conn, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(f.Fd())})
	if err != nil {
		return nil, fmt.Errorf("route netlink in %s: %w", path, err)
	}
	defer conn.Close()
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETADDR, Flags: netlink.Request | netlink.Dump},
		Data:   make([]byte, unix.SizeofIfAddrmsg), // family AF_UNSPEC: both
	})
	if err != nil {
		return nil, fmt.Errorf("list addresses in %s: %w", path, err)
	}
	var out []netip.Addr
	for _, m := range msgs {
		if a, ok := decodeAddr(m.Data); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// decodeAddr reads an RTM_NEWADDR: struct ifaddrmsg, then attributes;
// IFA_LOCAL is the address itself where it differs from IFA_ADDRESS (the
// peer's, on point-to-point links).
func decodeAddr(b []byte) (netip.Addr, bool) {
	if len(b) < unix.SizeofIfAddrmsg {
		return netip.Addr{}, false
	}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfAddrmsg:])
	if err != nil {
		return netip.Addr{}, false
	}
	var addr, local netip.Addr
	for ad.Next() {
		switch ad.Type() {
		case unix.IFA_ADDRESS:
			addr, _ = netip.AddrFromSlice(ad.Bytes())
		case unix.IFA_LOCAL:
			local, _ = netip.AddrFromSlice(ad.Bytes())
		}
	}
	if local.IsValid() {
		return local, true
	}
	return addr, addr.IsValid()
}
