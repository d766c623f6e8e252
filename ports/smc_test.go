package ports

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/golden"
	"github.com/rdmatrace/rdmatrace/rdma"
	"github.com/rdmatrace/rdmatrace/sockdiag"
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
	rows := JoinSMC(socks, qps, fakeProcs{owners: map[uint64]uint32{7001: 300, 7002: 300, 50: 301}})
	var out bytes.Buffer
	if err := SMCTable(rows).Render(&out); err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		out.Write(formats.AppendJSON(nil, SMCObject(&rows[i])))
		out.WriteString("\n")
	}
	golden.Check(t, filepath.Join("..", "testdata", "ports", "smc.golden"), out.Bytes())
	if bytes.Contains(out.Bytes(), []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
	if len(rows[2].QPs) != 2 || len(rows[0].QPs) != 0 {
		t.Errorf("QPs joined: %d and %d, want the 2 [smc] QPs on rxe0/1 for the SMC-R socket only", len(rows[2].QPs), len(rows[0].QPs))
	}
}
