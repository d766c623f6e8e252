package formats

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// gidEntries are a RoCE port's table (link-local and IPv4 GIDs of both
// types, a VLAN device's) and an InfiniBand port's GID.
func gidEntries() []rdma.GIDEntry {
	ll, v4 := netip.MustParseAddr("fe80::5054:ff:fe12:3456"), netip.MustParseAddr("::ffff:10.99.0.1")
	return []rdma.GIDEntry{
		{DevName: "mlx5_0", Port: 1, Index: 0, GID: netip.MustParseAddr("fe80::248a:703:49:d4f0")},
		{DevName: "rxe0", Port: 1, Index: 0, GID: ll, Eth: true, Netdev: "veth0", NetNS: 4026531840},
		{DevName: "rxe0", Port: 1, Index: 1, GID: ll, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0", NetNS: 4026531840},
		{DevName: "rxe0", Port: 1, Index: 2, GID: v4, Eth: true, Netdev: "veth0", NetNS: 4026531840},
		{DevName: "rxe0", Port: 1, Index: 3, GID: v4, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0", NetNS: 4026531840},
		{DevName: "rxe0", Port: 1, Index: 6, GID: ll, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth0.5", HasVLAN: true, VLAN: 5},
		{DevName: "rxe0", Port: 1, Index: 7, GID: ll, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "veth\x1b[31m"},
	}
}

// The table has show_gids' columns (GIDs as sysfs writes them, the IPv4
// address of a mapped one) with VLAN and NETNS after; -j has one object
// per GID. A netdev's name reaches the terminal escaped.
func TestGIDTableAndObjects(t *testing.T) {
	gs := gidEntries()
	var tab bytes.Buffer
	if err := GIDTable(gs).Render(&tab); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "../testdata/formats/gid.table", tab.Bytes())
	var js bytes.Buffer
	for i := range gs {
		js.Write(append(AppendJSON(nil, GIDObject(&gs[i])), '\n'))
	}
	golden.Check(t, "../testdata/formats/gid.ndjson", js.Bytes())
}

// A polled change says so, in both views.
func TestGIDChangeSaysItWasPolled(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	at := time.Date(2026, 11, 27, 8, 0, 1, 500000000, time.UTC)
	g := gidEntries()[4]
	var out bytes.Buffer
	out.WriteString(GIDChangeLine(at, "added", &g) + "\n")
	out.WriteString(GIDChangeLine(at, "removed", &gidEntries()[5]) + "\n")
	out.Write(append(AppendJSON(nil, GIDChangeObject(at, "added", &g)), '\n'))
	golden.Check(t, "../testdata/formats/gid-watch.txt", out.Bytes())
}
