package gid

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func entry(dev string, port, index uint32, g string, t rdma.GIDType, eth bool, ndev string, vlan int, ns uint64) rdma.GIDEntry {
	e := rdma.GIDEntry{DevName: dev, Port: port, Index: index, GID: netip.MustParseAddr(g), Type: t, Eth: eth, Netdev: ndev, NetNS: ns}
	if vlan >= 0 {
		e.HasVLAN, e.VLAN = true, uint16(vlan)
	}
	return e
}

// The fake tree (testdata/gid) has rxe0 on veth0 with its link-local and
// IPv4 GIDs of both types, an empty entry between them, the GIDs of a VLAN
// device on top, an IPv6 GID, an entry whose attributes went away while it
// was read; and an InfiniBand device of two ports.
func TestReadTheFakeTree(t *testing.T) {
	const ns = 4026531840
	src := Source{Root: "../../../testdata/gid", NetNS: ns}
	rxe := []rdma.GIDEntry{
		entry("rxe0", 1, 0, "fe80::5054:ff:fe12:3456", rdma.GIDTypeIB, true, "veth0", -1, ns),
		entry("rxe0", 1, 1, "fe80::5054:ff:fe12:3456", rdma.GIDTypeRoCEv2, true, "veth0", -1, ns),
		entry("rxe0", 1, 2, "::ffff:10.99.0.1", rdma.GIDTypeIB, true, "veth0", -1, ns),
		entry("rxe0", 1, 3, "::ffff:10.99.0.1", rdma.GIDTypeRoCEv2, true, "veth0", -1, ns),
		entry("rxe0", 1, 5, "fe80::5054:ff:fe12:3456", rdma.GIDTypeIB, true, "veth0.5", 5, ns),
		entry("rxe0", 1, 6, "fe80::5054:ff:fe12:3456", rdma.GIDTypeRoCEv2, true, "veth0.5", 5, ns),
		entry("rxe0", 1, 7, "2001:db8::1", rdma.GIDTypeRoCEv2, true, "veth0", -1, ns),
		entry("rxe0", 1, 10, "fe80::aa", rdma.GIDTypeIB, true, "", -1, 0),
	}
	ib := []rdma.GIDEntry{
		entry("mlx5_0", 1, 0, "fe80::248a:703:49:d4f0", rdma.GIDTypeIB, false, "", -1, 0),
		entry("mlx5_0", 2, 0, "fe80::248a:703:49:d4f1", rdma.GIDTypeIB, false, "", -1, 0),
	}
	for _, c := range []struct {
		name string
		f    Filter
		want []rdma.GIDEntry
	}{
		{"every device and port, by name", Filter{}, append(append([]rdma.GIDEntry{}, ib...), rxe...)},
		{"one device", Filter{Dev: "rxe0"}, rxe},
		{"one port", Filter{Port: 2}, ib[1:]},
		{"one port of one device", Filter{Dev: "mlx5_0", Port: 1}, ib[:1]},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := src.Read(c.f)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got\n%v\nwant\n%v", got, c.want)
			}
		})
	}
}

func TestUnknownDeviceAndPortAreErrorsNamingWhatIsThere(t *testing.T) {
	src := Source{Root: "../../../testdata/gid"}
	if _, err := src.Read(Filter{Dev: "mlx4_0"}); err == nil || !strings.Contains(err.Error(), `no RDMA device "mlx4_0" (devices: mlx5_0, rxe0)`) {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := src.Read(Filter{Dev: "rxe0", Port: 2}); err == nil || !strings.Contains(err.Error(), "no port 2 on rxe0") {
		t.Errorf("unknown port: %v", err)
	}
	if _, err := (Source{Root: t.TempDir()}).Read(Filter{}); err == nil || !strings.Contains(err.Error(), "is ib_core loaded?") {
		t.Errorf("no class directory: %v", err)
	}
}

// A GID that is none and a type no kernel writes are errors naming their
// file; the good entry beside them is still read.
func TestBadEntriesAreErrorsNamingTheFileAndTheRestIsRead(t *testing.T) {
	got, err := Source{Root: "../../../testdata/gid-bad"}.Read(Filter{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`rxe9/ports/1/gids/0: expected a GID (eight groups of four hex digits), found "fe80:zz"`,
		`rxe9/ports/1/gid_attrs/types/1: expected a GID type (IB/RoCE v1 or RoCE v2), found "RoCE v3"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(got) != 2 || got[1].Index != 2 || got[1].Type != rdma.GIDTypeRoCEv2 || got[1].Netdev != "veth9" {
		t.Errorf("entries beside the bad ones: %v", got)
	}
}

func TestParseVLAN(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint16
		ok   bool
	}{
		{"veth0.5  VID: 5\t REORDER_HDR: 1  dev->priv_flags: 1021\n", 5, true},
		{"eth0.4094  VID: 4094 REORDER_HDR: 1", 4094, true},
		{"eth0.x  VID: 4096", 0, false},
		{"VID:", 0, false},
		{"", 0, false},
	} {
		if v, ok := ParseVLAN(c.in); v != c.want || ok != c.ok {
			t.Errorf("ParseVLAN(%q) = %d, %v; want %d, %v", c.in, v, ok, c.want, c.ok)
		}
	}
}

func FuzzParseGID(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:5054:00ff:fe12:3456\n", "0000:0000:0000:0000:0000:ffff:0a63:0001", "1.2.3.4", "fe80::1%eth0", "RoCE v2", "VID: 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := ParseGID(s); err == nil && (!g.Is6() || g.Zone() != "") {
			t.Errorf("ParseGID(%q) = %v: not a GID", s, g)
		}
		if _, err := ParseType(s); err == nil && strings.TrimSpace(s) == "" {
			t.Errorf("ParseType(%q) took an empty type", s)
		}
		if v, ok := ParseVLAN(s); ok && v > 4095 {
			t.Errorf("ParseVLAN(%q) = %d", s, v)
		}
	})
}

func TestDiffSaysWhatWasAddedRemovedAndChanged(t *testing.T) {
	a := entry("rxe0", 1, 0, "fe80::1", rdma.GIDTypeRoCEv2, true, "veth0", -1, 0)
	b := entry("rxe0", 1, 1, "::ffff:10.0.0.1", rdma.GIDTypeRoCEv2, true, "veth0", -1, 0)
	b2 := entry("rxe0", 1, 1, "::ffff:10.0.0.2", rdma.GIDTypeRoCEv2, true, "veth0", -1, 0)
	c := entry("rxe0", 1, 2, "::ffff:10.0.0.3", rdma.GIDTypeRoCEv2, true, "veth0", -1, 0)
	got := Diff([]rdma.GIDEntry{a, b}, []rdma.GIDEntry{b2, c})
	want := []Change{{"removed", a}, {"changed", b2}, {"added", c}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Diff = %v, want %v", got, want)
	}
	if d := Diff([]rdma.GIDEntry{a, b}, []rdma.GIDEntry{a, b}); len(d) != 0 {
		t.Errorf("no change: %v", d)
	}
}

// gid -w's use case without a command line: a table read before, the
// tree's read every tick, each difference handed over once, until the
// context ends it.
func TestWatchHandsOverEachChangeOnce(t *testing.T) {
	src := Source{Root: "../../../testdata/gid", NetNS: 4026531840}
	cur, err := src.Read(Filter{Dev: "mlx5_0"})
	if err != nil {
		t.Fatal(err)
	}
	last := append([]rdma.GIDEntry{}, cur...)
	last[1].GID = netip.MustParseAddr("fe80::1") // port 2's GID has changed since
	ctx, cancel := context.WithCancel(context.Background())
	var changes []string
	flushes := 0
	err = src.Watch(ctx, last, WatchOptions{Filter: Filter{Dev: "mlx5_0"}, Every: time.Millisecond,
		Change: func(_ time.Time, c Change) error {
			changes = append(changes, c.What+" "+c.Entry.GID.String())
			return nil
		},
		Flush: func() error {
			if flushes++; flushes == 3 {
				cancel()
			}
			return nil
		},
		Warn: func(err error) { t.Errorf("warned: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(changes, ";"); got != "changed fe80::248a:703:49:d4f1" {
		t.Errorf("changes %q, want port 2's GID once", changes)
	}
}
