package main

import (
	"io"

	"github.com/rdmatrace/rdmatrace/debugfs"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
)

// linkTypes maps the kernel's device protocol to the legacy TYPE column.
var linkTypes = map[string]string{"ib": "IB", "roce": "ETH", "iw": "IW"}

// writeLegacy prints live cm_ids in the legacy rdma_cm debugfs layout with
// PID and COMM columns — the "rdmastat" asked for in 2009 — so a live host
// and an old dump can be compared side by side. TYPE and NET_DEV come from
// the device and the port of each ID.
func writeLegacy(w io.Writer, cl *nldev.Client, devs []rdma.Device, rs []rdma.Resource) error {
	ports, err := cl.Ports(devs)
	if err != nil {
		return err
	}
	protocol := map[uint32]string{}
	for _, d := range devs {
		protocol[d.Index] = d.Protocol
	}
	type portKey struct{ dev, port uint32 }
	netdev := map[portKey]string{}
	for _, p := range ports {
		netdev[portKey{p.DevIndex, p.Port}] = p.Netdev
	}
	for i := range rs {
		r := &rs[i]
		// TYPE is the device's; NET_DEV needs a port (a listener on a
		// wildcard address is bound to a device but to no port).
		if t := linkTypes[protocol[r.DevIndex]]; t != "" {
			r.DevType, r.Has = t, r.Has|rdma.HasDevType
		}
		if r.Has&rdma.HasPort == 0 {
			continue
		}
		if n := netdev[portKey{r.DevIndex, r.Port}]; n != "" {
			r.Netdev, r.Has = n, r.Has|rdma.HasNetdev
		}
	}
	return debugfs.WriteLegacy(w, rs, []string{"PID", "COMM"})
}
