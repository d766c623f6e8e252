package nldev

import (
	"context"
	"errors"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ReadNodeState reads what a scrape serves: devices, ports and their
// counters in the NodeState, and every type's objects given to each as
// the dumps give them (owners named by owners, when set), so that a node
// with a million objects costs a netlink message's worth, not a million
// objects. Each part's error is a *rdma.PartError, the rest is still
// read. When ctx ends, it stops at the next netlink message and returns
// what it read, without the errors that the stop caused: the caller says
// that the read was cut short (ctx.Err()).
func ReadNodeState(ctx context.Context, owners Owners, each func(*rdma.Resource)) rdma.NodeState {
	var s rdma.NodeState
	cl, err := Dial()
	if err != nil {
		s.Errors = append(s.Errors, &rdma.PartError{Part: rdma.PartNetlink, Err: err})
		return s
	}
	defer cl.Close()
	defer cl.Bind(ctx)()
	stopped := func() bool { return ctx.Err() != nil }
	add := func(part string, err error) {
		if err != nil && !stopped() {
			s.Errors = append(s.Errors, &rdma.PartError{Part: part, Err: err})
		}
	}
	s.Devices, err = cl.Devices()
	add(rdma.PartDevices, err)
	for _, t := range rdma.ResourceTypes {
		if stopped() {
			return s
		}
		err := cl.EachResource(t, s.Devices, func(r *rdma.Resource) {
			if owners != nil {
				owners.Resource(r)
			}
			each(r)
		})
		if errors.Is(err, errors.ErrUnsupported) {
			s.Unknown = append(s.Unknown, t) // not an error: nothing is known of it
			continue
		}
		add(rdma.ResourcesPart(t), err)
	}
	if stopped() {
		return s
	}
	s.Ports, err = cl.Ports(s.Devices)
	add(rdma.PartPorts, err)
	s.Stats, err = cl.PortStats(s.Ports)
	add(rdma.PartPortStats, err)
	return s
}
