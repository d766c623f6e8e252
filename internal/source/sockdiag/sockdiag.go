// Package sockdiag lists a network namespace's TCP and UDP sockets through
// the kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag), as ss
// does: the host's side of a port that rdma_cm may want too (iWARP shares
// the host's TCP port space; RoCE and InfiniBand do not).
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/mdlayher/netlink"
)

// Socket is one socket as inet_diag reports it.
type Socket struct {
	Proto    string // "tcp" or "udp"
	Src, Dst netip.AddrPort
	State    State
	UID      uint32
	Inode    uint64 // 0 for a socket with no file (a TIME-WAIT one, or a kernel socket)
	IfIndex  uint32 // bound to this interface, when not 0
}

// State is the kernel's TCP state number (include/net/tcp_states.h); UDP
// sockets use ESTABLISHED when connected and CLOSE when not.
type State uint8

var stateNames = [...]string{"", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT",
	"UNCONN", "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING", "NEW-SYN-RECV"}

// String names s as ss does.
func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return fmt.Sprintf("state-%d", uint8(s))
}

// Listen is a TCP listener's state.
const Listen State = 10

const (
	familySockDiag     = 4  // NETLINK_SOCK_DIAG
	sockDiagByFam      = 20 // SOCK_DIAG_BY_FAMILY
	reqLen             = 56 // struct inet_diag_req_v2
	msgLen             = 72 // struct inet_diag_msg
	allStates          = 0xffffffff
	protoTCP, protoUDP = 6, 17
)

// Dump lists every TCP and UDP socket, IPv4 and IPv6, of the network
// namespace open at netnsFD (-1: the caller's own).
func Dump(netnsFD int) ([]Socket, error) {
	cfg := &netlink.Config{}
	if netnsFD >= 0 {
		cfg.NetNS = netnsFD
	}
	conn, err := netlink.Dial(familySockDiag, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the socket diagnostics (NETLINK_SOCK_DIAG): %w", err)
	}
	defer conn.Close()
	var out []Socket
	for _, q := range []struct {
		family, proto uint8
	}{{syscall.AF_INET, protoTCP}, {syscall.AF_INET6, protoTCP}, {syscall.AF_INET, protoUDP}, {syscall.AF_INET6, protoUDP}} {
		req := make([]byte, reqLen)
		req[0], req[1] = q.family, q.proto
		binary.NativeEndian.PutUint32(req[4:], allStates)
		msgs, err := conn.Execute(netlink.Message{
			Header: netlink.Header{Type: sockDiagByFam, Flags: netlink.Request | netlink.Dump},
			Data:   req,
		})
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue // no diag module for this family or protocol (udp_diag not loaded)
			}
			return out, fmt.Errorf("dump %s sockets: %w", protoName(q.proto), err)
		}
		for _, m := range msgs {
			s, err := Decode(m.Data, q.proto)
			if err != nil {
				return out, fmt.Errorf("dump %s sockets: %w", protoName(q.proto), err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func protoName(p uint8) string {
	if p == protoTCP {
		return "tcp"
	}
	return "udp"
}

// Decode reads one struct inet_diag_msg of protocol proto (6 or 17).
func Decode(b []byte, proto uint8) (Socket, error) {
	if len(b) < msgLen {
		return Socket{}, fmt.Errorf("inet_diag_msg of %d bytes, want %d", len(b), msgLen)
	}
	s := Socket{Proto: protoName(proto), State: State(b[1])}
	// struct inet_diag_sockid: ports and addresses in network order, the
	// interface and cookie in the host's.
	sport, dport := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:])
	var src, dst netip.Addr
	switch b[0] {
	case syscall.AF_INET:
		src, dst = netip.AddrFrom4([4]byte(b[8:12])), netip.AddrFrom4([4]byte(b[24:28]))
	case syscall.AF_INET6:
		src, dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
	default:
		return Socket{}, fmt.Errorf("inet_diag_msg of address family %d, want AF_INET or AF_INET6", b[0])
	}
	s.Src, s.Dst = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
	s.IfIndex = binary.NativeEndian.Uint32(b[40:])
	s.UID = binary.NativeEndian.Uint32(b[64:])
	s.Inode = uint64(binary.NativeEndian.Uint32(b[68:]))
	return s, nil
}
