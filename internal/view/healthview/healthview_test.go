package healthview

import (
	"bytes"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/health"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// node is an rxe node as the guest has it: rxe0/1 ACTIVE over veth0 with
// 10.99.0.1 and its RoCE v2 GID, an rdma cgroup with room left.
func node() *health.State {
	return &health.State{
		Ports: []health.Port{{Dev: "rxe0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "100 Gb/sec (4X EDR)", Gbps: 100, LinkLayer: "Ethernet", Netdev: "veth0"}},
		GIDs: []rdma.GIDEntry{
			{DevName: "rxe0", Port: 1, Index: 1, GID: netip.MustParseAddr("fe80::1"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0"},
			{DevName: "rxe0", Port: 1, Index: 3, GID: netip.MustParseAddr("::ffff:10.99.0.1"), Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0"},
		},
		Addrs:   map[string][]netip.Addr{"veth0": {netip.MustParseAddr("10.99.0.1"), netip.MustParseAddr("fe80::1")}},
		Cgroups: []health.CgroupLimit{{Path: "/job1", Dev: "rxe0", Resource: "hca_object", Max: 100, Current: 50}},
	}
}

func report(s *health.State, o health.Options) health.Report {
	if o.QPErrors == 0 {
		o.QPErrors, o.FailedCreates, o.Headroom = health.DefaultQPErrors, health.DefaultFailedCreates, health.DefaultHeadroom
	}
	fs := health.Check(s, o)
	r := health.Report{Verdict: health.Verdict(fs), Findings: fs}
	if s.Window != nil {
		r.Source = s.Window.Source
	}
	return r
}

// Each case is the text and the JSON of a report the checks made, in
// testdata/health/CASE.txt and CASE.json.
func TestGoldens(t *testing.T) {
	cases := map[string]func() health.Report{
		"healthy": func() health.Report {
			s := node()
			s.Window = &health.Window{Source: "trace", Length: 10 * time.Second}
			return report(s, health.Options{Since: 10 * time.Second})
		},
		// No window, no cgroup v2, the GID tables unreadable: healthy by
		// what could be told, and it says what could not.
		"healthy-partly": func() health.Report {
			s := node()
			s.Cgroups, s.CgroupsSkip = nil, "no cgroup v2 hierarchy mounted"
			s.GIDsErr = errors.New("open /sys/class/infiniband/rxe0/ports/1/gids: permission denied")
			return report(s, health.Options{})
		},
		// A port down on one device, a slow one on another, a limit
		// reached, a window polled without BPF with a flap in it; a
		// netdev's name with an escape in it is not written raw.
		"unhealthy": func() health.Report {
			s := node()
			s.Ports[0].State, s.Ports[0].PhysState, s.Ports[0].Netdev = "DOWN", "Disabled", "ve\x1b[2Jth0"
			s.Ports = append(s.Ports, health.Port{Dev: "siw0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", Rate: "25 Gb/sec (1X EDR)", Gbps: 25, LinkLayer: "Ethernet", Netdev: "eth1"})
			s.Addrs["eth1"] = nil
			s.Cgroups[0].Current = 100
			s.Window = &health.Window{Source: "netlink", Length: 5 * time.Second, Why: "no BPF: the kernel has no BTF (/sys/kernel/btf/vmlinux)",
				PortStates: map[string][]string{"rxe0/1": {"ACTIVE", "DOWN"}, "siw0/1": {"ACTIVE"}}, QPsInErr: map[string]int{"rxe0": 0, "siw0": 12}}
			return report(s, health.Options{Since: 5 * time.Second, Gbps: 100})
		},
		"unknown": func() health.Report {
			s := &health.State{PortsErr: errors.New("open /sys/class/infiniband: permission denied"), CgroupsSkip: "no cgroup v2 hierarchy mounted"}
			return report(s, health.Options{})
		},
	}
	for name, make := range cases {
		r := make()
		var text, js bytes.Buffer
		if err := WriteText(&text, &r); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, &r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("..", "..", "..", "testdata", "health", name+".txt"), text.Bytes())
		golden.Check(t, filepath.Join("..", "..", "..", "testdata", "health", name+".json"), js.Bytes())
	}
}
