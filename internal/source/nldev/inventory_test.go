package nldev

import (
	"errors"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// namer names every owner "named" and counts what it saw.
type namer struct{ n int }

func (m *namer) Resource(r *rdma.Resource) { m.n++; r.Owner.Comm = "named" }

func TestInventoryNamesOwnersBeforeKeepAndSaysWhatTheKernelCannotDump(t *testing.T) {
	cl := fakeKernel(t)
	recorded := 0
	cl.Record = func(uint16, []byte, error) { recorded++ }
	owners := &namer{}
	inv := cl.Inventory(InventoryOptions{
		Types:  []rdma.ResType{rdma.ResQP, rdma.ResCTX},
		Owners: owners,
		Keep:   func(r *rdma.Resource) bool { return r.Owner.Comm == "named" && r.LQPN != 17 },
	})
	if len(inv.Devices) != 2 || inv.DevicesErr != nil {
		t.Errorf("devices = %+v, %v; want rxe0 and gone0", inv.Devices, inv.DevicesErr)
	}
	var lqpns []uint32
	for _, r := range inv.Resources {
		lqpns = append(lqpns, r.LQPN)
	}
	if len(lqpns) != 3 || lqpns[0] != 18 || lqpns[1] != 1 || lqpns[2] != 19 {
		t.Errorf("QPs %v, want 18 (no port), then 1 and 19 (17 not kept)", lqpns)
	}
	if owners.n != 4 {
		t.Errorf("owners named %d times, want each of the 4 QPs once", owners.n)
	}
	if len(inv.Unknown) != 1 || inv.Unknown[0] != rdma.ResCTX {
		t.Errorf("unknown = %v, want ctx (as on Linux 5.10)", inv.Unknown)
	}
	if err := inv.Partial(); err != nil {
		t.Errorf("Partial = %v, want nil: ctx is unknown, not an error", err)
	}
	if err := inv.Err(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Err = %v, want the ctx dump's", err)
	}
	if recorded == 0 {
		t.Errorf("the client's raw-recording hook saw no reply")
	}
}
