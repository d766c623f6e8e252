package nldev

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmatrace/rdmatrace/internal/host/netns"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Owners names the owners of resources: their processes' comm and place
// (enrich.Enricher does).
type Owners interface {
	Resource(r *rdma.Resource)
}

// InventoryOptions say what an inventory lists.
type InventoryOptions struct {
	// Types are the resource types to list, in this order; nil: every
	// type of rdma.ResourceTypes.
	Types []rdma.ResType
	// Owners names each resource's owner, before Keep sees it (the
	// cgroup, container and pod filters need its place); nil: owners are
	// as the kernel gives them (a pid or a module's name).
	Owners Owners
	// Keep, when set, says which resources to list.
	Keep func(*rdma.Resource) bool
	// AllNetNS: in the kernel's exclusive netns mode, the devices (and
	// their resources) of every other network namespace too, each asked
	// from a socket made there (needs CAP_SYS_ADMIN). In shared mode
	// every namespace sees the same: ours alone is asked.
	AllNetNS bool
	// Record, when set, is given to every client the inventory dials (see
	// Client.Record): the raw replies, for test fixtures.
	Record func(cmd uint16, replies []byte, err error)
	// Roots are where the namespaces are found (zero: netns.DefaultRoots).
	Roots netns.Roots
}

// Inventory is every device and resource the kernel lists, owners named.
type Inventory struct {
	Devices   []rdma.Device
	Resources []rdma.Resource // by type in the order asked, each as Client.Resources lists them
	// Unknown are the types the kernel cannot dump (Linux 5.10 has no ctx
	// or srq dump); their errors, in Errs, match errors.ErrUnsupported.
	Unknown []rdma.ResType
	// DevicesErr is why the devices could not (all) be listed.
	DevicesErr error
	// TypeErrs are the errors of each type's dumps, in the order asked.
	TypeErrs []TypeError
	// NetNSErrs are the namespaces that could not be entered (AllNetNS).
	NetNSErrs []error
}

// TypeError is why resources of one type could not (all) be listed.
type TypeError struct {
	Type rdma.ResType
	Err  error
}

// Err joins every error: the devices', each type's (a type the kernel
// cannot dump too), each namespace's.
func (inv *Inventory) Err() error {
	errs := []error{inv.DevicesErr}
	for _, e := range inv.TypeErrs {
		errs = append(errs, e.Err)
	}
	return errors.Join(append(errs, inv.NetNSErrs...)...)
}

// Partial joins the errors but for the types the kernel cannot dump,
// which Unknown lists: what ps and the exporter show as not known rather
// than as an error.
func (inv *Inventory) Partial() error {
	errs := []error{inv.DevicesErr}
	for _, e := range inv.TypeErrs {
		if !errors.Is(e.Err, errors.ErrUnsupported) {
			errs = append(errs, e.Err)
		}
	}
	return errors.Join(append(errs, inv.NetNSErrs...)...)
}

// Inventory lists this client's devices and their resources of every
// type asked, owners named: what res, ps, trace's start snapshot and the
// exporter read. AllNetNS is for TakeInventory; here, one namespace.
func (c *Client) Inventory(o InventoryOptions) Inventory {
	var inv Inventory
	inv.Devices, inv.DevicesErr = c.Devices()
	c.resourcesInto(&inv, inv.Devices, o)
	return inv
}

// resourcesInto adds devs' resources to inv.
func (c *Client) resourcesInto(inv *Inventory, devs []rdma.Device, o InventoryOptions) {
	types := o.Types
	if types == nil {
		types = rdma.ResourceTypes
	}
	for _, t := range types {
		rs, err := c.Resources(t, devs)
		if err != nil {
			inv.TypeErrs = append(inv.TypeErrs, TypeError{t, err})
			if errors.Is(err, errors.ErrUnsupported) {
				inv.Unknown = append(inv.Unknown, t)
			}
		}
		for i := range rs {
			if o.Owners != nil {
				o.Owners.Resource(&rs[i])
			}
			if o.Keep == nil || o.Keep(&rs[i]) {
				inv.Resources = append(inv.Resources, rs[i])
			}
		}
	}
}

// TakeInventory dials RDMA netlink and lists what Client.Inventory does;
// with AllNetNS, in exclusive mode, the devices of every other network
// namespace are added, each listed through a socket made there (the
// tracer sees their events; netlink shows them only from there). Only
// failing to dial our own socket is an error; the rest is in the
// inventory's errors.
func TakeInventory(o InventoryOptions) (Inventory, error) {
	cl, err := Dial()
	if err != nil {
		return Inventory{}, err
	}
	defer cl.Close()
	cl.Record = o.Record
	inv := cl.Inventory(o)
	if !o.AllNetNS {
		return inv, nil
	}
	if sys, err := cl.System(); err != nil || sys.NetNSMode != "exclusive" {
		return inv, nil
	}
	all, _ := Where{Roots: o.Roots}.roots().All()
	eachNetNS(all[min(1, len(all)):], func(_ netns.NS, other *Client, err error) { // all[0] is ours
		if err != nil {
			inv.NetNSErrs = append(inv.NetNSErrs, err)
			return
		}
		other.Record = o.Record
		devs, err := other.Devices()
		if err != nil {
			// Not DevicesErr: that one says our own listing failed.
			inv.NetNSErrs = append(inv.NetNSErrs, err)
		}
		inv.Devices = append(inv.Devices, devs...)
		other.resourcesInto(&inv, devs, o)
	})
	return inv, nil
}

// DialIn opens the RDMA netlink socket in network namespace ns.
func DialIn(ns netns.NS) (*Client, error) {
	f, err := os.Open(ns.Path)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w", ns.Name, err)
	}
	defer f.Close()
	cl, err := DialNetNS(int(f.Fd()))
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("network namespace %s: %w (entering a namespace needs CAP_SYS_ADMIN: run as root)", ns.Name, err)
		}
		return nil, fmt.Errorf("network namespace %s: %w", ns.Name, err)
	}
	return cl, nil
}
