package rdma

import (
	"reflect"
	"testing"
)

func TestDeviceCapNamesAsIproute2ListsThem(t *testing.T) {
	for _, tc := range []struct {
		flags uint64
		want  []string
	}{
		{0, []string{}},
		{1<<1 | 1<<2, []string{"BAD_PKEY_CNTR", "BAD_QKEY_CNTR"}},
		{1 << 6, []string{"UD_AV_PORT_ENFORCE_PORT_ENFORCE"}},
		{1<<16 | 1<<28, []string{"UNKNOWN", "UNKNOWN"}},
		{1<<31 | 1<<32 | 1<<36, []string{"ON_DEMAND_PAGING", "SG_GAPS_REG", "PCI_WRITE_END_PADDING"}},
		{1 << 63, []string{"UNKNOWN"}},
	} {
		if got := DeviceCapNames(tc.flags); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DeviceCapNames(%#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}
