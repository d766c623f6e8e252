package ports_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/smcnl"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// The notes' runs: a client that fell back (no SMC device) and its server
// (peer declined), and an SMC-R client in INIT with its link on rxe0,
// whose device port has the smc module's QP and a process's QP (not
// listed with it).
func TestSMCGolden(t *testing.T) {
	socks := []sockdiag.SMCSocket{
		{Src: ap("10.99.0.1:51000"), Dst: ap("10.99.0.1:7500"), State: 1, Mode: 1, Inode: 7001, HasFallback: true, Fallback: 0x03030000},
		{Src: ap("10.99.0.1:7500"), Dst: ap("10.99.0.1:51000"), State: 1, Mode: 1, Inode: 7002, HasFallback: true, Fallback: 0x05000000, PeerDiagnosis: 0x03030000},
		{Src: ap("10.99.0.1:51001"), Dst: ap("10.99.0.1:7501"), State: 2, Mode: 0, Inode: 50, HasFallback: true, Token: 2,
			Link: &sockdiag.SMCLink{ID: 1, Dev: "rxe0", Port: 1, GID: "0000:0000:0000:0000:0000:ffff:0a63:0001", PeerGID: "0000:0000:0000:0000:0000:ffff:0a63:0001", Role: "client"}},
	}
	qps := []rdma.Resource{
		{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 17, QPState: 3, Owner: rdma.Owner{KernName: "smc"}},
		{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 18, QPState: 2, Owner: rdma.Owner{KernName: "smc"}},
		{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 19, Owner: rdma.Owner{PID: 172}},
	}
	rows := ports.JoinSMC(socks, qps, fakeProcs{owners: map[uint64]uint32{7001: 300, 7002: 300, 50: 301}})
	var out bytes.Buffer
	if err := formats.SMCTable(rows).Render(&out); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		out.Write(formats.AppendJSON(nil, formats.SMCObject(&rows[i])))
		out.WriteString("\n")
	}
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "ports", "smc.golden"), out.Bytes())
	if bytes.Contains(out.Bytes(), []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
	if len(rows[2].QPs) != 2 || len(rows[0].QPs) != 0 {
		t.Errorf("QPs joined: %d and %d, want the 2 [smc] QPs on rxe0/1 for the SMC-R socket only", len(rows[2].QPs), len(rows[0].QPs))
	}
}

// TestLinkGroupGolden: the 6.12 SMC-Rv2 link group of the notes (client
// side, link activating) with its client socket, the two [smc] QPs of
// rxe0/1, a second link group with no links, and a hostile PNET ID.
func TestLinkGroupGolden(t *testing.T) {
	gid := "0000:0000:0000:0000:0000:ffff:0a63:0001"
	socks := []sockdiag.SMCSocket{
		{Src: ap("10.99.0.1:51001"), Dst: ap("10.99.0.1:7501"), State: 2, Mode: 0, Inode: 50, HasFallback: true, Token: 2,
			Link: &sockdiag.SMCLink{ID: 1, Dev: "rxe0", Port: 1, GID: gid, PeerGID: gid, Role: "client"}},
		{Src: ap("10.99.0.1:7501"), Dst: ap("10.99.0.1:51001"), State: 2, Mode: 0, Inode: 51, HasFallback: true,
			Link: &sockdiag.SMCLink{ID: 1, Dev: "rxe0", Port: 1, GID: gid, PeerGID: gid, Role: "server"}},
	}
	qps := []rdma.Resource{
		{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 17, QPState: 3, Owner: rdma.Owner{KernName: "smc"}},
		{Type: rdma.ResQP, DevName: "rxe0", Port: 1, LQPN: 19, Owner: rdma.Owner{PID: 172}},
	}
	groups := []smcnl.LinkGroup{
		{ID: 512, Role: "client", Type: "single", PNetID: "RXEPNET", Conns: 1, NetCookie: 1,
			V2:    &smcnl.V2{Version: 2, Release: 1, OS: 3, NegotiatedEID: "SEEDLAB-TEST", PeerHost: "guest"},
			Links: []smcnl.Link{{ID: 1, Dev: "rxe0", Port: 1, GID: gid, PeerGID: gid, Conns: 1, NetDev: 3, UID: "dead0201", PeerUID: "beef0201", State: "activating"}}},
		{ID: 768, Role: "server", Type: "none", PNetID: "EVIL\x1b[2J"},
	}
	smcRows := ports.JoinSMC(socks, qps, fakeProcs{owners: map[uint64]uint32{50: 301}})
	rows := ports.JoinLinkGroups(groups, smcRows, qps)
	ports.AttachLinkGroups(smcRows, groups)
	var out bytes.Buffer
	if err := formats.SMCTable(smcRows).Render(&out); err != nil {
		t.Fatal(err)
	}
	for i := range smcRows {
		out.Write(formats.AppendJSON(nil, formats.SMCObject(&smcRows[i])))
		out.WriteString("\n")
	}
	if err := formats.LinkGroupTable(rows).Render(&out); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		out.Write(formats.AppendJSON(nil, formats.LinkGroupObject(&rows[i])))
		out.WriteString("\n")
	}
	devs := []smcnl.Device{{Name: "rxe0", Links: 1, Critical: true,
		Ports: []smcnl.DevicePort{{Port: 1, PNetID: "RXEPNET", PNetByUser: true, NetDev: 3, Active: true, Valid: true, Links: 1}}}}
	if err := formats.SMCDeviceTable(ports.DevicePorts(devs), func(i uint32) string { return map[uint32]string{3: "veth0"}[i] }).Render(&out); err != nil {
		t.Fatal(err)
	}
	out.Write(formats.AppendJSON(nil, formats.SMCDeviceObject(&ports.DevicePorts(devs)[0])))
	out.WriteString("\n")
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "ports", "linkgroup.golden"), out.Bytes())
	if len(rows) != 2 || len(rows[0].Sockets) != 1 || rows[0].Sockets[0].Inode != 50 {
		t.Errorf("rows %+v: want the client socket (not the server's) on the client link group's link", rows)
	}
	if smcRows[0].LinkGroup == nil || *smcRows[0].LinkGroup != 512 || smcRows[1].LinkGroup != nil {
		t.Errorf("link groups of the sockets: %v, %v; want 512 for the client's, none for the server's (no server link group)", smcRows[0].LinkGroup, smcRows[1].LinkGroup)
	}
}
