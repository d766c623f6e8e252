package nldev

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fakeKernel answers GET with two devices and QP dumps with entries in the
// kernel's id order across ports; device 2 has vanished by dump time (only
// the first GET lists it). Like Linux 5.10, it has no CTX dump.
func fakeKernel(t *testing.T) *Client {
	gets := 0
	devMsg := func(idx uint32, name string) netlink.Message {
		return netlink.Message{
			Header: netlink.Header{Type: netlink.HeaderType(clientNLDEV<<10 | cmdGet)},
			Data: encode(t, func(ae *netlink.AttributeEncoder) {
				ae.Uint32(attrDevIndex, idx)
				ae.String(attrDevName, name)
				ae.Uint32(attrPortIndex, 1)
			}),
		}
	}
	qp := func(lqpn uint32, port uint32) func(*netlink.AttributeEncoder) {
		return func(e *netlink.AttributeEncoder) {
			if port != 0 {
				e.Uint32(attrPortIndex, port)
			}
			e.Uint32(attrResLQPN, lqpn)
			e.Uint8(attrResType, 2)
			e.Uint8(attrResState, 0)
		}
	}
	answer := func(req netlink.Message) ([]netlink.Message, error) {
		if req.Header.Flags&netlink.Dump == 0 {
			t.Errorf("request %+v is not a dump", req.Header)
		}
		switch uint16(req.Header.Type) & 0x3ff {
		case cmdGet:
			if gets++; gets > 1 {
				return nltest.Multipart([]netlink.Message{devMsg(1, "rxe0"), {}})
			}
			return nltest.Multipart([]netlink.Message{devMsg(1, "rxe0"), devMsg(2, "gone0"), {}})
		case cmdResCTXGet:
			return kernelError(t, syscall.EINVAL, req), nil
		case cmdResQPGet:
			ad, err := netlink.NewAttributeDecoder(req.Data)
			if err != nil {
				t.Fatal(err)
			}
			for ad.Next() {
				if ad.Type() == attrDevIndex && ad.Uint32() == 2 {
					return kernelError(t, syscall.EINVAL, req), nil
				}
			}
			return nltest.Multipart([]netlink.Message{{
				Header: netlink.Header{Type: req.Header.Type},
				Data:   dump(t, resTables[rdma.ResQP], qp(1, 1), qp(17, 1), qp(18, 0), qp(19, 1)),
			}, {}})
		}
		t.Errorf("unexpected request type %d", req.Header.Type)
		return kernelError(t, syscall.EOPNOTSUPP, req), nil
	}
	conn := nltest.Dial(func(reqs []netlink.Message) ([]netlink.Message, error) {
		msgs, err := answer(reqs[0])
		for i := range msgs {
			msgs[i].Header.Sequence, msgs[i].Header.PID = reqs[0].Header.Sequence, reqs[0].Header.PID
		}
		return msgs, err
	})
	return NewClient(conn, true)
}

func TestResourcesDumpsEachDeviceOnceInIproute2Order(t *testing.T) {
	c := fakeKernel(t)
	defer c.Close()
	devs, err := c.Devices()
	if err != nil || len(devs) != 2 || devs[1].Name != "gone0" {
		t.Fatalf("Devices() = %+v, %v", devs, err)
	}
	rs, err := c.Resources(rdma.ResQP, devs)
	if err != nil {
		t.Fatalf("a device that vanished between listing and dump is not an error, got %v", err)
	}
	var got []uint32
	for _, r := range rs {
		got = append(got, r.LQPN)
	}
	want := []uint32{18, 1, 17, 19}
	if len(got) != len(want) {
		t.Fatalf("lqpns %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("lqpns %v, want %v (portless entries first, then kernel order)", got, want)
		}
	}
}

// TestResourcesSaysWhenTheKernelCannotDumpAType: Linux 5.10 answers
// RES_CTX_GET with EINVAL, as for a vanished device; a device still listed
// makes it an error naming the type, not an empty result.
func TestResourcesSaysWhenTheKernelCannotDumpAType(t *testing.T) {
	c := fakeKernel(t)
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.Resources(rdma.ResCTX, devs[:1])
	if err == nil || len(rs) != 0 {
		t.Fatalf("Resources(ctx) = %v, %v; want an error", rs, err)
	}
	if want := "the kernel cannot dump ctx resources (rxe0: netlink receive: invalid argument)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("error %v is not errors.ErrUnsupported and EINVAL", err)
	}
}

// kernelError is an NLMSG_ERROR as the kernel sends it: the negative errno
// followed by the request's own header.
func kernelError(t *testing.T, errno syscall.Errno, req netlink.Message) []netlink.Message {
	hdr, err := (&netlink.Message{Header: req.Header}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	code := make([]byte, 4)
	binary.NativeEndian.PutUint32(code, uint32(-int32(errno)))
	return []netlink.Message{{Header: netlink.Header{Type: netlink.Error}, Data: append(code, hdr...)}}
}
