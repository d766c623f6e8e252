package formats

import (
	"bytes"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func TestStatGolden(t *testing.T) {
	ports := []rdma.PortStats{{DevIndex: 1, DevName: "rxe0", Port: 1, Counters: []rdma.Counter{{Name: "sent_pkts", Value: 124}, {Name: "rcvd_pkts", Value: 120}, {Name: "duplicate_request", Value: 0}}}}
	modes := []rdma.QPCounterMode{{DevName: "rxe0", Port: 1}, {DevName: "mlx5_0", Port: 1, Auto: true, ByType: true, ByPID: true}}
	qcs := []rdma.QPCounter{{DevName: "rxe0", Port: 1, ID: 4, QPType: rdma.QPTypeRC, HasType: true, Owner: rdma.Owner{PID: 812, Comm: "rping"},
		Counters: []rdma.Counter{{Name: "sent_pkts", Value: 5}}, LQPNs: []uint32{17, 18}}}
	var out bytes.Buffer
	nd := NewNDJSONWriter(&out)
	for i := range ports {
		nd.Write(PortStatsObject(&ports[i]))
	}
	for i := range modes {
		nd.Write(QPCounterModeObject(&modes[i]))
	}
	for i := range qcs {
		nd.Write(QPCounterObject(&qcs[i]))
	}
	if err := nd.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := PortStatsTable(ports).Render(&out); err != nil {
		t.Fatal(err)
	}
	tw := NewTextWriter(&out)
	for i := range qcs {
		tw.Object("link "+qcs[i].DevName+"/1", QPCounterObject(&qcs[i]), "ifname", "port")
	}
	tw.Flush()
	golden.Check(t, "../testdata/formats/stat.golden", out.Bytes())
}
