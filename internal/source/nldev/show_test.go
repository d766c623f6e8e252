package nldev

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// dev's, link's, res's and stat's use case without a command line: the
// rows go to write in one section of ours, decode problems come back
// after them, a listing that failed is the error and nothing is written.
func TestShowWritesThenSaysTheProblems(t *testing.T) {
	saved := dial
	defer func() { dial = saved }()
	dial = func() (*Client, error) { return fakeKernel(t), nil }
	var writes [][][]rdma.Device
	write := func(names []string, rows [][]rdma.Device) error {
		if len(names) != 1 || names[0] != "" {
			t.Errorf("names %q, want our namespace alone", names)
		}
		writes = append(writes, rows)
		return nil
	}
	problems, err := Show(Where{}, func(cl *Client) ([]rdma.Device, error) { return cl.DevicesNamed("rxe0") }, write)
	if err != nil || problems != nil || len(writes) != 1 || len(writes[0][0]) != 1 || writes[0][0][0].Name != "rxe0" {
		t.Fatalf("Show(rxe0) = %v, %v; wrote %+v", problems, err, writes)
	}
	writes = nil
	_, err = Show(Where{}, func(cl *Client) ([]rdma.Device, error) { return cl.DevicesNamed("mlx5_0") }, write)
	if err == nil || !strings.Contains(err.Error(), `unknown device "mlx5_0"`) || len(writes) != 0 {
		t.Errorf("Show(mlx5_0) = %v, wrote %d; want the listing's error and nothing written", err, len(writes))
	}
	var rwrites int
	problems, err = Show(Where{}, func(cl *Client) ([]rdma.Resource, error) {
		inv := cl.Inventory(InventoryOptions{Types: []rdma.ResType{rdma.ResCTX}})
		return inv.Resources, inv.Err()
	}, func([]string, [][]rdma.Resource) error { rwrites++; return nil })
	if err != nil || problems == nil || rwrites != 1 {
		t.Errorf("a type the kernel cannot dump: %v, %v, %d writes; want the rows written, then the problem", problems, err, rwrites)
	}
	wantErr := errors.New("stdout closed")
	if _, err := Show(Where{}, func(cl *Client) ([]rdma.Device, error) { return cl.DevicesNamed("rxe0") },
		func([]string, [][]rdma.Device) error { return wantErr }); !errors.Is(err, wantErr) {
		t.Errorf("write failing: %v, want its error", err)
	}
}
