package exporter

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// callFailTypes name the object a failed call would have made:
// rdma_create_failures_total's type label (a fixed set, with "cm_id" for
// rdma_cm's steps).
var callFailTypes = map[string]string{
	"get_context": "ctx", "alloc_pd": "pd", "create_cq": "cq", "create_qp": "qp", "open_qp": "qp",
	"create_srq": "srq", "reg_mr": "mr", "reg_dmabuf_mr": "mr", "alloc_mw": "mw", "create_ah": "ah",
	"open_xrcd": "xrcd", "create_wq": "wq", "alloc_dm": "dm", "create_flow": "flow",
	"rdma_bind_addr": "cm_id", "rdma_resolve_addr": "cm_id", "rdma_resolve_route": "cm_id",
	"rdma_listen": "cm_id", "rdma_connect": "cm_id",
}

// errnoReasons are the errnos a failed call's reason names; any other
// is "other". They are the ones a create or an rdma_cm step returns for
// a cause the reader acts on.
var errnoReasons = map[syscall.Errno]bool{
	unix.EINVAL: true, unix.ENOMEM: true, unix.EAGAIN: true, unix.ENOSPC: true, unix.EPERM: true,
	unix.EACCES: true, unix.EOPNOTSUPP: true, unix.ENODEV: true, unix.EBUSY: true, unix.EFAULT: true,
	unix.ENETUNREACH: true, unix.EHOSTUNREACH: true, unix.EADDRINUSE: true, unix.EADDRNOTAVAIL: true,
	unix.ETIMEDOUT: true, unix.ECONNREFUSED: true, unix.EMFILE: true,
}

// createFailReason is a failed call's reason label: the limit the kernel
// named (cgroup, memlock), device_cap when what was asked exceeds the
// device's limits, else the errno's name from a fixed set, or other.
func createFailReason(c *rdma.CallFail) string {
	switch c.Limit.Kind {
	case rdma.LimitRDMACgroup:
		return "cgroup"
	case rdma.LimitMemlock:
		return "memlock"
	}
	if len(c.OverCaps("")) > 0 {
		return "device_cap"
	}
	if errno := syscall.Errno(c.Errno); errnoReasons[errno] {
		return unix.ErrnoName(errno)
	}
	return "other"
}

// countCallFail counts a failed call in rdma_create_failures_total.
// Called with x.mu held.
func (x *Exporter) countCallFail(e *rdma.Event) {
	typ, ok := callFailTypes[e.CallFail.Op]
	if !ok {
		typ = "other"
	}
	dev := ""
	if e.Has(rdma.EvHasDev) {
		dev = e.DevName
	}
	x.createFails.WithLabelValues(dev, typ, createFailReason(&e.CallFail)).Inc()
}
