package nldev

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// DevicesNamed lists the device called name, or every device when name is
// "" (SelectDevices); a decode problem is an error beside what was listed.
func (c *Client) DevicesNamed(name string) ([]rdma.Device, error) {
	devs, err := c.Devices()
	devs, missing := SelectDevices(devs, name)
	if missing != nil {
		return nil, missing
	}
	return devs, err
}

// SelectDevices keeps the device called name, or all when name is "". A
// name that is not there is a NotFoundError that lists the devices that
// are.
func SelectDevices(devs []rdma.Device, name string) ([]rdma.Device, error) {
	if name == "" {
		return devs, nil
	}
	var names []string
	for _, d := range devs {
		if d.Name == name {
			return []rdma.Device{d}, nil
		}
		names = append(names, termsafe.Sanitize(d.Name))
	}
	if len(names) == 0 {
		return nil, &NotFoundError{fmt.Errorf("unknown device %q: there is no RDMA device", name)}
	}
	return nil, &NotFoundError{fmt.Errorf("unknown device %q: the devices are %s", name, strings.Join(names, ", "))}
}

// PortsNamed lists the ports of device dev (every device's when ""), of
// port only when that is not "" (DEV/PORT as rdma link takes it). A device
// or port that is not there is a NotFoundError.
func (c *Client) PortsNamed(dev, port string) ([]rdma.Port, error) {
	devs, derr := c.DevicesNamed(dev)
	if nf := (*NotFoundError)(nil); errors.As(derr, &nf) {
		return nil, derr
	}
	ports, perr := c.Ports(devs)
	if port != "" {
		var keep []rdma.Port
		var have []string
		for _, p := range ports {
			if fmt.Sprint(p.Port) == port {
				keep = append(keep, p)
			}
			have = append(have, fmt.Sprint(p.Port))
		}
		if len(keep) == 0 && perr == nil {
			return nil, &NotFoundError{fmt.Errorf("device %s has no port %q (it has %s)", termsafe.Sanitize(dev), port, strings.Join(have, ", "))}
		}
		ports = keep
	}
	return ports, errors.Join(derr, perr)
}

// SummariesOf are the per-device counts, of device dev only when not "".
// A dev that is not there is a NotFoundError as DevicesNamed's, with the
// devices there are and the resource types (res DEV and res TYPE share
// the word: a type mistyped reads as a device).
func (c *Client) SummariesOf(dev string) ([]rdma.Summary, error) {
	sums, err := c.Summaries()
	if dev == "" {
		return sums, err
	}
	var keep []rdma.Summary
	for _, s := range sums {
		if s.DevName == dev {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		devs, _ := c.Devices()
		if _, missing := SelectDevices(devs, dev); missing != nil {
			return nil, &NotFoundError{Err: fmt.Errorf("%w (nor is it a resource type: %s)", missing, resTypeNames())}
		}
	}
	return keep, err
}

// resTypeNames lists the resource types, for messages.
func resTypeNames() string {
	names := make([]string, len(rdma.ResourceTypes))
	for i, t := range rdma.ResourceTypes {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// legacyTypes maps the kernel's device protocol to the legacy TYPE column.
var legacyTypes = map[string]string{"ib": "IB", "roce": "ETH", "iw": "IW"}

// AddLegacyColumns gives rdma_cm IDs what the legacy debugfs layout shows
// beside them and netlink gives elsewhere: TYPE from their device's
// protocol, NET_DEV from their port.
func (c *Client) AddLegacyColumns(devs []rdma.Device, rs []rdma.Resource) error {
	ports, err := c.Ports(devs)
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
		if t := legacyTypes[protocol[r.DevIndex]]; t != "" {
			r.DevType, r.Has = t, r.Has|rdma.HasDevType
		}
		if r.Has&rdma.HasPort == 0 {
			continue
		}
		if n := netdev[portKey{r.DevIndex, r.Port}]; n != "" {
			r.Netdev, r.Has = n, r.Has|rdma.HasNetdev
		}
	}
	return nil
}

// OnPorts lists, for the ports of dev (every device's when "") and port
// (every port when ""), what of reads of them: a listing of rdma
// statistic's, whose ports that could not be listed are in the error
// beside what could.
func OnPorts[T any](dev, port string, of func(*Client, []rdma.Port) ([]T, error)) func(*Client) ([]T, error) {
	return func(c *Client) ([]T, error) {
		ports, err := c.PortsNamed(dev, port)
		ts, oerr := of(c, ports)
		return ts, errors.Join(err, oerr)
	}
}
