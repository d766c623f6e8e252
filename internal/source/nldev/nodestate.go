package nldev

import (
	"errors"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ReadNodeState reads what a scrape serves: devices and every type's
// objects (owners named by owners), ports and their counters. Each
// part's error is a *rdma.PartError, the rest is still read.
func ReadNodeState(owners Owners) rdma.NodeState {
	var s rdma.NodeState
	cl, err := Dial()
	if err != nil {
		s.Errors = append(s.Errors, &rdma.PartError{Part: rdma.PartNetlink, Err: err})
		return s
	}
	defer cl.Close()
	add := func(part string, err error) {
		if err != nil {
			s.Errors = append(s.Errors, &rdma.PartError{Part: part, Err: err})
		}
	}
	inv := cl.Inventory(InventoryOptions{Owners: owners})
	s.Devices, s.Resources, s.Unknown = inv.Devices, inv.Resources, inv.Unknown
	add(rdma.PartDevices, inv.DevicesErr)
	s.Ports, err = cl.Ports(s.Devices)
	add(rdma.PartPorts, err)
	s.Stats, err = cl.PortStats(s.Ports)
	add(rdma.PartPortStats, err)
	for _, e := range inv.TypeErrs {
		if !errors.Is(e.Err, errors.ErrUnsupported) { // in s.Unknown
			add(rdma.ResourcesPart(e.Type), e.Err)
		}
	}
	return s
}
