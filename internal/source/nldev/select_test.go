package nldev

import (
	"errors"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// An unknown device was nothing and exit 0; now an error naming the devices.
func TestUnknownDeviceListsTheDevices(t *testing.T) {
	devs := []rdma.Device{{Name: "rxe0"}, {Name: "siw0"}}
	if got, err := SelectDevices(devs, "siw0"); err != nil || len(got) != 1 || got[0].Name != "siw0" {
		t.Errorf("SelectDevices(siw0) = %v, %v", got, err)
	}
	if got, err := SelectDevices(devs, ""); err != nil || len(got) != 2 {
		t.Errorf("SelectDevices(\"\") = %v, %v", got, err)
	}
	_, err := SelectDevices(devs, "mlx5_0")
	if err == nil || err.Error() != `unknown device "mlx5_0": the devices are rxe0, siw0` {
		t.Errorf("SelectDevices(mlx5_0): %v", err)
	}
	_, err = SelectDevices(nil, "show")
	if err == nil || err.Error() != `unknown device "show": there is no RDMA device` {
		t.Errorf("SelectDevices(show) with no devices: %v", err)
	}
}

// A device or port that is not there is a NotFoundError: List tells it
// from a decode problem, an error only when no namespace has it.
func TestUnknownDeviceIsNotFound(t *testing.T) {
	_, err := SelectDevices([]rdma.Device{{Name: "rxe0"}}, "mlx5_0")
	if nf := (*NotFoundError)(nil); !errors.As(err, &nf) {
		t.Errorf("SelectDevices(mlx5_0) = %v, want a NotFoundError", err)
	}
}
