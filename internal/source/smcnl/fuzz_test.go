package smcnl

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
)

// encodeDevice is the GET_DEV_SMCR message the kernel would send for d
// (smc_nl_handle_smcr_dev).
func encodeDevice(t testing.TB, d Device) []byte {
	b := func(v bool) uint8 {
		if v {
			return 1
		}
		return 0
	}
	return msg(t, cmdGetDevSMCR, genDevSMCR, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(devUseCnt, d.Links)
		ae.Uint8(devIsCrit, b(d.Critical))
		ae.String(devPCIID, d.PCIID)
		ae.String(devIBName, d.Name)
		for _, p := range d.Ports {
			ae.Nested(devPort+uint16(p.Port)-1, func(n *netlink.AttributeEncoder) error {
				n.Uint8(portPNetUsr, b(p.PNetByUser))
				n.String(portPNetID, p.PNetID)
				n.Uint32(portNetDev, p.NetDev)
				n.Uint8(portState, b(p.Active))
				n.Uint8(portValid, b(p.Valid))
				n.Uint32(portLnkCnt, p.Links)
				return nil
			})
		}
	})
}

// FuzzDecodeDevices: a GET_DEV_SMCR dump of two messages. The messages
// are independent: the dump gives what each gives alone, and one that is
// an error alone gives nothing (no device half-read beside the error) and
// is named by its place in the dump. A device decoded without an error
// re-encodes to itself.
func FuzzDecodeDevices(f *testing.F) {
	f.Add(devMsg(f), encodeDevice(f, Device{Name: "mlx5_1", Links: 2, PCIID: "0000:3b:00.1",
		Ports: []DevicePort{{Port: 1, PNetID: "NET1", NetDev: 4, Active: true, Valid: true}, {Port: 2, PNetID: "NET2", Links: 2}}}))
	f.Add(devMsg(f), lgrMsg(f))
	f.Add([]byte{6, 1, 0, 0}, []byte{6, 1, 0, 0, 4, 0, 6, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		got, err := DecodeDevices([][]byte{a, b})
		var want []Device
		for i, m := range [][]byte{a, b} {
			one, oneErr := DecodeDevices([][]byte{m})
			if oneErr != nil {
				if len(one) != 0 {
					t.Fatalf("message %d alone: %+v beside the error %v", i+1, one, oneErr)
				}
				if w := fmt.Sprintf("message %d of the device dump", i+1); err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("message %d alone: %v; in the dump the error %v does not say %q", i+1, oneErr, err, w)
				}
			}
			want = append(want, one...)
		}
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("the dump gives %+v, its messages alone %+v", got, want)
		}
		for _, d := range got {
			for _, p := range d.Ports {
				if p.Port != 1 && p.Port != 2 {
					t.Fatalf("device %q has a port %d", d.Name, p.Port)
				}
			}
			again, err := DecodeDevices([][]byte{encodeDevice(t, d)})
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], d) {
				t.Fatalf("decoded %+v; re-encoded, it decodes to %+v, %v", d, again, err)
			}
		}
	})
}
