package nldev

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The listing commands' use case without a command line: a listing in our
// namespace is one section, a decode problem beside its rows; what is not
// there at all is the listing's error.
func TestListInOurNamespace(t *testing.T) {
	saved := dial
	defer func() { dial = saved }()
	dial = func() (*Client, error) { return fakeKernel(t), nil }
	secs, err := List(Where{}, func(cl *Client) ([]rdma.Device, error) { return cl.DevicesNamed("rxe0") })
	if err != nil || len(secs) != 1 || secs[0].NetNS != "" || len(secs[0].Rows) != 1 || secs[0].Rows[0].Name != "rxe0" {
		t.Fatalf("List(rxe0) = %+v, %v", secs, err)
	}
	_, err = List(Where{}, func(cl *Client) ([]rdma.Device, error) { return cl.DevicesNamed("mlx5_0") })
	if nf := (*NotFoundError)(nil); err == nil || errors.As(err, &nf) || !strings.Contains(err.Error(), `unknown device "mlx5_0": the devices are rxe0, gone0`) {
		t.Errorf("List(mlx5_0) = %v, want the missing device as the listing's error", err)
	}
	rs, err := List(Where{}, func(cl *Client) ([]rdma.Resource, error) {
		inv := cl.Inventory(InventoryOptions{Types: []rdma.ResType{rdma.ResCTX}})
		return inv.Resources, inv.Err()
	})
	if err != nil || len(rs) != 1 || rs[0].Err == nil {
		t.Errorf("a type the kernel cannot dump: %+v, %v; want it in the section's error", rs, err)
	}
}
