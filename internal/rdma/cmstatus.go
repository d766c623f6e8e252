package rdma

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// CMRejected is RDMA_CM_EVENT_REJECTED, whose status is a reject reason
// rather than an errno.
const CMRejected CMEvent = 8

// ibcmRejectReasons is the kernel's ibcm_rej_reason_strs
// (drivers/infiniband/core/cm.c), indexed by enum ib_cm_rej_reason: what
// rdma_reject_msg() says for an IB or RoCE device.
var ibcmRejectReasons = [...]string{
	1: "no QP", 2: "no EEC", 3: "no resources", 4: "timeout", 5: "unsupported",
	6: "invalid comm ID", 7: "invalid comm instance", 8: "invalid service ID",
	9: "invalid transport type", 10: "stale conn", 11: "RDC not exist",
	12: "invalid GID", 13: "invalid LID", 14: "invalid SL", 15: "invalid traffic class",
	16: "invalid hop limit", 17: "invalid packet rate", 18: "invalid alt GID",
	19: "invalid alt LID", 20: "invalid alt SL", 21: "invalid alt traffic class",
	22: "invalid alt hop limit", 23: "invalid alt packet rate", 24: "port CM redirect",
	25: "port redirect", 26: "invalid MTU", 27: "insufficient resp resources",
	28: "consumer defined", 29: "invalid RNR retry", 30: "duplicate local comm ID",
	31: "invalid class version", 32: "invalid flow label", 33: "invalid alt flow label",
	35: "vendor option is not supported",
}

// CMStatusName names the status of an rdma_cm event or of cm_qp_create:
// "" for 0; for REJECTED on IB and RoCE, a positive status is the IB CM
// reject reason, named as ibcm_reject_msg() does; a negative status is an
// errno (iWARP's rejects, ADDR_ERROR's -ETIMEDOUT...), named "ECONNREFUSED".
// Anything else is its number.
func CMStatusName(ev CMEvent, status int32) string {
	switch {
	case status == 0:
		return ""
	case status < 0:
		if n := unix.ErrnoName(syscall.Errno(-status)); n != "" {
			return n
		}
	case ev == CMRejected && int(status) < len(ibcmRejectReasons) && ibcmRejectReasons[status] != "":
		return ibcmRejectReasons[status]
	case ev == CMRejected:
		return "unrecognized reason"
	}
	return strconv.Itoa(int(status))
}
