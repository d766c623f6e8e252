package formats

import (
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Device writes d as `rdma [-d] dev show` does: "0: rxe0: node_type ca ...".
// With details, the caps follow on a line of their own, as iproute2's:
// "    caps: <BAD_PKEY_CNTR, ...>".
func (t *TextWriter) Device(d *rdma.Device, details bool) error {
	if err := t.Object(strconv.FormatUint(uint64(d.Index), 10)+": "+d.Name+":", DeviceObject(d, details), "ifindex", "ifname", "caps"); err != nil || !details {
		return err
	}
	_, err := t.w.WriteString("    caps: <" + strings.Join(rdma.DeviceCapNames(d.CapFlags), ", ") + ">\n")
	return err
}

// Port writes p as `rdma [-d] link show` does: "link rxe0/1 state ACTIVE
// ...". Without details iproute2 puts the netdev's index in JSON only.
func (t *TextWriter) Port(p *rdma.Port, details bool) error {
	skip := []string{"ifindex", "ifname", "port", "netdev_index"}
	if details {
		skip = skip[:3]
	}
	return t.Object("link "+p.DevName+"/"+strconv.FormatUint(uint64(p.Port), 10), PortObject(p), skip...)
}

// DeviceTable lays out devices as a table.
func DeviceTable(devs []rdma.Device) *Table {
	t := NewTable("IFINDEX", "DEV", "NODE_TYPE", "FW", "NODE_GUID", "PORTS", "PROTOCOL")
	for i := range devs {
		d := &devs[i]
		t.Append(strconv.FormatUint(uint64(d.Index), 10), d.Name, d.NodeType.String(), d.FWVersion, guid(d.NodeGUID),
			strconv.FormatUint(uint64(d.Ports), 10), d.Protocol)
	}
	return t
}

// PortTable lays out ports as a table; LIDs only where the port has them (IB).
func PortTable(ports []rdma.Port) *Table {
	t := NewTable("LINK", "STATE", "PHYSICAL_STATE", "NETDEV", "LID", "SM_LID")
	for i := range ports {
		p := &ports[i]
		lid, smlid := "", ""
		if p.Has&rdma.HasLID != 0 {
			lid = strconv.FormatUint(uint64(p.LID), 10)
		}
		if p.Has&rdma.HasSMLID != 0 {
			smlid = strconv.FormatUint(uint64(p.SMLID), 10)
		}
		t.Append(p.DevName+"/"+strconv.FormatUint(uint64(p.Port), 10), p.State.String(), p.PhysState.String(), p.Netdev, lid, smlid)
	}
	return t
}

// SummaryTable lays out resource counts, a column per type `rdma res` dumps.
func SummaryTable(sums []rdma.Summary) *Table {
	head := []string{"IFINDEX", "DEV"}
	for _, typ := range rdma.ResourceTypes {
		head = append(head, strings.ToUpper(typ.String()))
	}
	t := NewTable(head...)
	for _, s := range sums {
		row := []string{strconv.FormatUint(uint64(s.DevIndex), 10), s.DevName}
		for _, typ := range rdma.ResourceTypes {
			v := ""
			for _, c := range s.Counts {
				if c.Name == typ.String() {
					v = strconv.FormatUint(c.Value, 10)
				}
			}
			row = append(row, v)
		}
		t.Append(row...)
	}
	return t
}
