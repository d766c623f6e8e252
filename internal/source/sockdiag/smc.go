package sockdiag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/mdlayher/netlink"
)

// SMCSocket is one AF_SMC socket as smc_diag reports it: the TCP 4-tuple
// of its CLC socket (the TCP connection SMC starts on, and falls back to),
// its mode, why it fell back, and the RDMA link it uses.
type SMCSocket struct {
	Src, Dst netip.AddrPort
	State    SMCState
	Mode     SMCMode
	UID      uint32
	Inode    uint64
	// Fallback is why SMC was not used (SMC_CLC_DECL_*), 0 when it was;
	// PeerDiagnosis is what the peer declined with.
	Fallback, PeerDiagnosis uint32
	HasFallback             bool
	// Link is the SMC-R link while the socket's link group exists.
	Link *SMCLink
	// Token identifies the SMC connection within its link group (CONNINFO).
	Token uint32
}

// SMCLink is SMC_DIAG_LGRINFO: the RDMA side of an SMC-R connection.
type SMCLink struct {
	ID      uint8
	Dev     string
	Port    uint8
	GID     string
	PeerGID string
	Role    string // "client" or "server"
}

// SMCMode is smc_diag's diag_mode.
type SMCMode uint8

func (m SMCMode) String() string {
	switch m {
	case 0:
		return "SMCR"
	case 1:
		return "TCP" // fallback
	case 2:
		return "SMCD"
	}
	return "mode-" + strconv.Itoa(int(m))
}

// SMCState is enum smc_state (net/smc/smc.h).
type SMCState uint8

var smcStates = map[SMCState]string{1: "ACTIVE", 2: "INIT", 7: "CLOSED", 10: "LISTEN",
	20: "PEERCLOSEWAIT1", 21: "PEERCLOSEWAIT2", 22: "APPCLOSEWAIT1", 23: "APPCLOSEWAIT2",
	24: "APPFINCLOSEWAIT", 25: "PEERFINCLOSEWAIT", 26: "PEERABORTWAIT", 27: "PROCESSABORT"}

func (s SMCState) String() string {
	if n, ok := smcStates[s]; ok {
		return n
	}
	return "state-" + strconv.Itoa(int(s))
}

const (
	afSMC        = 43
	smcReqLen    = 52 // struct smc_diag_req: family, pad[2], ext, inet_diag_sockid
	smcMsgLen    = 64 // struct smc_diag_msg
	smcLinkLen   = 146
	smcConnInfo  = 1 // SMC_DIAG_CONNINFO
	smcLgrInfo   = 2 // SMC_DIAG_LGRINFO
	smcFallback  = 5 // SMC_DIAG_FALLBACK (always sent)
	fallbackLen  = 8
	smcExtWanted = 1<<(smcConnInfo-1) | 1<<(smcLgrInfo-1)
	nlaHeaderLen = 4
	nlaTypeMask  = 0x3fff
)

// ErrNoSMC is DumpSMC's error when the kernel has no SMC socket
// diagnostics (the smc_diag module not loaded, or no SMC at all).
var ErrNoSMC = errors.New("no SMC socket diagnostics (modprobe smc_diag)")

// DumpSMC lists the caller's network namespace's AF_SMC sockets.
func DumpSMC() ([]SMCSocket, error) {
	conn, err := netlink.Dial(familySockDiag, nil)
	if err != nil {
		return nil, fmt.Errorf("open the socket diagnostics (NETLINK_SOCK_DIAG): %w", err)
	}
	defer conn.Close()
	req := make([]byte, smcReqLen)
	req[0], req[3] = afSMC, smcExtWanted
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{Type: sockDiagByFam, Flags: netlink.Request | netlink.Dump},
		Data:   req,
	})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, ErrNoSMC
		}
		return nil, fmt.Errorf("dump SMC sockets: %w", err)
	}
	var out []SMCSocket
	var errs []error
	for i, m := range msgs {
		s, err := DecodeSMC(m.Data)
		if err != nil {
			errs = append(errs, fmt.Errorf("SMC socket %d of the dump: %w", i+1, err))
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// DecodeSMC reads one struct smc_diag_msg and its attributes. An attribute
// too short for its struct is an error; the socket's fixed part is kept.
func DecodeSMC(b []byte) (SMCSocket, error) {
	if len(b) < smcMsgLen {
		return SMCSocket{}, fmt.Errorf("smc_diag_msg of %d bytes, want %d", len(b), smcMsgLen)
	}
	s := SMCSocket{State: SMCState(b[1]), Mode: SMCMode(b[2])}
	sport, dport := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:])
	// diag_family is AF_SMC, and the message does not say whether the CLC
	// socket is IPv4 (SMCPROTO_SMC: the address in the first 4 bytes) or
	// IPv6 (SMCPROTO_SMC6): an address whose last 12 bytes are zero, on
	// both sides, is taken for IPv4 (no IPv6 host address looks so).
	v4 := allZero(b[12:24]) && allZero(b[28:40])
	var src, dst netip.Addr
	switch {
	case b[0] == syscall.AF_INET || (b[0] == afSMC && v4):
		src, dst = netip.AddrFrom4([4]byte(b[8:12])), netip.AddrFrom4([4]byte(b[24:28]))
	case b[0] == syscall.AF_INET6 || b[0] == afSMC:
		src, dst = netip.AddrFrom16([16]byte(b[8:24])).Unmap(), netip.AddrFrom16([16]byte(b[24:40])).Unmap()
	default:
		return SMCSocket{}, fmt.Errorf("smc_diag_msg of address family %d, want AF_SMC (43)", b[0])
	}
	s.Src, s.Dst = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
	s.UID = binary.NativeEndian.Uint32(b[52:])
	s.Inode = binary.NativeEndian.Uint64(b[56:])
	rest := b[smcMsgLen:]
	var errs []error
	for len(rest) >= nlaHeaderLen {
		l := int(binary.NativeEndian.Uint16(rest))
		typ := binary.NativeEndian.Uint16(rest[2:]) & nlaTypeMask
		if l < nlaHeaderLen || l > len(rest) {
			errs = append(errs, fmt.Errorf("attribute of length %d with %d bytes left", l, len(rest)))
			break
		}
		v := rest[nlaHeaderLen:l]
		switch typ {
		case smcFallback:
			if len(v) < fallbackLen {
				errs = append(errs, fmt.Errorf("SMC_DIAG_FALLBACK of %d bytes, want %d", len(v), fallbackLen))
				break
			}
			s.Fallback, s.PeerDiagnosis = binary.NativeEndian.Uint32(v), binary.NativeEndian.Uint32(v[4:])
			s.HasFallback = true
		case smcLgrInfo:
			if len(v) < smcLinkLen+1 {
				errs = append(errs, fmt.Errorf("SMC_DIAG_LGRINFO of %d bytes, want %d", len(v), smcLinkLen+1))
				break
			}
			s.Link = &SMCLink{ID: v[0], Dev: cstr(v[1:65]), Port: v[65], GID: cstr(v[66:106]), PeerGID: cstr(v[106:146]),
				Role: map[byte]string{0: "client", 1: "server"}[v[len(v)-1]]}
		case smcConnInfo:
			if len(v) >= 4 {
				s.Token = binary.NativeEndian.Uint32(v)
			}
		}
		rest = rest[min((l+3)&^3, len(rest)):]
	}
	return s, errors.Join(errs...)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
