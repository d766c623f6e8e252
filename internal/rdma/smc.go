package rdma

import "fmt"

// smcDecline names SMC's decline and fallback reasons (SMC_CLC_DECL_*,
// net/smc/smc_clc.h), as smc-tools' smcss prints them.
var smcDecline = map[uint32]string{
	0x01010000: "insufficient memory resources",
	0x02010000: "timeout waiting for QP confirm link",
	0x02020000: "timeout waiting for QP add link",
	0x03000000: "configuration error",
	0x03010000: "peer did not indicate SMC",
	0x03020000: "IPsec usage",
	0x03030000: "no SMC device found (R or D)",
	0x03030001: "no SMC-D device found",
	0x03030002: "no SMC-R device found",
	0x03030003: "hardware has no ISMv2 support",
	0x03030004: "peer sent no CLC v2 extension",
	0x03030005: "peer sent no CLC SMC-Dv2 extension",
	0x03030006: "peer sent no SEID",
	0x03030007: "no SMC-Dv2 device found",
	0x03030008: "peer sent no UEID",
	0x03030009: "release version negotiation failed",
	0x0303000a: "max connections negotiation failed",
	0x0303000b: "max links negotiation failed",
	0x03040000: "SMC modes do not match (R or D)",
	0x03050000: "peer has eyecatcher in RMBE",
	0x03060000: "fastopen sockopt not supported",
	0x03070000: "IP prefix / subnet mismatch",
	0x03080000: "error getting the VLAN id of the IP device",
	0x03090000: "error registering the VLAN id on the ISM device",
	0x030a0000: "no active SMC-R link in the link group",
	0x030b0000: "SMC-R link from the server not found",
	0x030c0000: "SMC version mismatch",
	0x030d0000: "SMC-D DMB limit exceeded",
	0x030e0000: "SMC-Rv2 connection found no route to the peer",
	0x030f0000: "SMC-Rv2 connection indirect mismatch",
	0x04000000: "synchronization error",
	0x05000000: "peer declined during handshake",
	0x09990000: "internal error",
	0x09990001: "rtoken handling failed",
	0x09990002: "IB ready link failed",
	0x09990003: "registering the RMB failed",
}

// SMCReason names a decline or fallback code: "0x03030000 (no SMC device
// found (R or D))"; unknown codes keep their number alone.
func SMCReason(code uint32) string {
	s := fmt.Sprintf("0x%08x", code)
	if n, ok := smcDecline[code]; ok {
		s += " (" + n + ")"
	}
	return s
}
