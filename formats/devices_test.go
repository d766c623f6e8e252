package formats

import (
	"bytes"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// sampleDevices: an rxe device as the guest reports it, an InfiniBand HCA
// with firmware and LIDs, and a hostile device name.
func sampleDevices() ([]rdma.Device, []rdma.Port, []rdma.Summary) {
	on, off := true, false
	devs := []rdma.Device{
		{Index: 0, Name: "rxe0", Ports: 1, NodeType: 1, NodeGUID: 0x505400fffe123456, SysImageGUID: 0x505400fffe123456, Protocol: "roce", DIM: &off,
			CapFlags: 1<<1 | 1<<2 | 1<<4 | 1<<5 | 1<<6 | 1<<10 | 1<<11 | 1<<12 | 1<<13 | 1<<17 | 1<<21 | 1<<24},
		{Index: 3, Name: "mlx5_0", Ports: 2, NodeType: 1, FWVersion: "20.31.1014", NodeGUID: 0x0c42a10300b5e1f0, SysImageGUID: 0x0c42a10300b5e1f0, Protocol: "ib", DIM: &on,
			CapFlags: 1<<16 | 1<<31 | 1<<32}, // 16: a bit iproute2 has no name for
		{Index: 7, Name: "evil\x1b[2J", Ports: 1, NodeType: 4, Protocol: "iw"},
	}
	ports := []rdma.Port{
		{DevIndex: 0, DevName: "rxe0", Port: 1, State: 4, PhysState: 5, NetdevIndex: 3, Netdev: "veth0", Has: rdma.HasNetdev},
		{DevIndex: 3, DevName: "mlx5_0", Port: 1, SubnetPrefix: 0xfe80000000000000, LID: 12, SMLID: 1, LMC: 0, State: 4, PhysState: 5,
			NetdevIndex: 5, Netdev: "ib0", Has: rdma.HasSubnetPrefix | rdma.HasLID | rdma.HasSMLID | rdma.HasLMC | rdma.HasNetdev},
		{DevIndex: 3, DevName: "mlx5_0", Port: 2, SubnetPrefix: 0xfe80000000000000, LID: 65535, SMLID: 0, State: 1, PhysState: 3,
			Has: rdma.HasSubnetPrefix | rdma.HasLID | rdma.HasSMLID | rdma.HasLMC},
		{DevIndex: 7, DevName: "evil\x1b[2J", Port: 1, State: 2, PhysState: 2, Netdev: "eth\a1", NetdevIndex: 9, Has: rdma.HasNetdev},
	}
	sums := []rdma.Summary{
		{DevIndex: 0, DevName: "rxe0", Counts: []rdma.Count{{Name: "pd", Value: 5}, {Name: "cq", Value: 3}, {Name: "qp", Value: 3}, {Name: "cm_id", Value: 3}, {Name: "mr", Value: 7}, {Name: "ctx", Value: 2}, {Name: "srq", Value: 0}}},
		{DevIndex: 3, DevName: "mlx5_0", Counts: []rdma.Count{{Name: "pd", Value: 1}, {Name: "cq", Value: 1}, {Name: "qp", Value: 1}, {Name: "cm_id", Value: 0}, {Name: "mr", Value: 0}, {Name: "ctx", Value: 0}}},
	}
	return devs, ports, sums
}

func TestDeviceTextGolden(t *testing.T) {
	devs, ports, sums := sampleDevices()
	var buf bytes.Buffer
	tw := NewTextWriter(&buf)
	for _, details := range []bool{false, true} {
		for i := range devs {
			if err := tw.Device(&devs[i], details); err != nil {
				t.Fatal(err)
			}
		}
		for i := range ports {
			if err := tw.Port(&ports[i], details); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range sums {
		if err := tw.Summary(&sums[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	noControls(t, buf.Bytes())
	golden.Check(t, "../testdata/formats/devices.txt", buf.Bytes())
}

func TestDeviceJSONGolden(t *testing.T) {
	devs, ports, sums := sampleDevices()
	var buf bytes.Buffer
	nw := NewNDJSONWriter(&buf)
	var objs []Object
	for _, details := range []bool{false, true} {
		for i := range devs {
			objs = append(objs, DeviceObject(&devs[i], details))
		}
	}
	for i := range ports {
		objs = append(objs, PortObject(&ports[i]))
	}
	for i := range sums {
		objs = append(objs, SummaryObject(&sums[i]))
	}
	for _, o := range objs {
		if err := nw.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	noControls(t, buf.Bytes())
	golden.Check(t, "../testdata/formats/devices.ndjson", buf.Bytes())
}

func TestDeviceTableGolden(t *testing.T) {
	devs, ports, sums := sampleDevices()
	var buf bytes.Buffer
	for _, tab := range []*Table{DeviceTable(devs), PortTable(ports), SummaryTable(sums)} {
		if err := tab.Render(&buf); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("\n")
	}
	noControls(t, buf.Bytes())
	golden.Check(t, "../testdata/formats/devices.table", buf.Bytes())
}

// noControls fails on any raw control character but the line ends.
func noControls(t *testing.T, b []byte) {
	t.Helper()
	for i, c := range b {
		if (c < 0x20 && c != '\n') || c == 0x7f {
			t.Errorf("raw control byte %#x at offset %d", c, i)
			return
		}
	}
}
