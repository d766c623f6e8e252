package nldev

import (
	"context"
	"errors"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// bigKernel answers a PD dump with msgs messages of perMsg PDs each, and
// counts the dump requests.
func bigKernel(t *testing.T, msgs, perMsg int, dumps *int) *Client {
	pd := func(id uint32) func(*netlink.AttributeEncoder) {
		return func(e *netlink.AttributeEncoder) {
			e.Uint32(attrResPDN, id)
			e.Uint32(attrResPID, 1000)
			e.Uint64(attrResUsecnt, 1)
		}
	}
	conn := nltest.Dial(func(reqs []netlink.Message) ([]netlink.Message, error) {
		req := reqs[0]
		if uint16(req.Header.Type)&0x3ff != cmdResPDGet {
			t.Errorf("unexpected request type %d", req.Header.Type)
			return nil, nil
		}
		*dumps++
		var out []netlink.Message
		for m := range msgs {
			var es []func(*netlink.AttributeEncoder)
			for i := range perMsg {
				es = append(es, pd(uint32(m*perMsg+i)))
			}
			out = append(out, netlink.Message{Header: netlink.Header{Type: req.Header.Type}, Data: dump(t, resTables[rdma.ResPD], es...)})
		}
		out, err := nltest.Multipart(append(out, netlink.Message{}))
		for i := range out {
			out[i].Header.Sequence, out[i].Header.PID = req.Header.Sequence, req.Header.PID
		}
		return out, err
	})
	return NewClient(conn, true)
}

// A dump is given one message at a time, all of it; a cancelled context
// stops it at the message where the cancel is seen, with the context's
// error.
func TestEachResourceStreamsAndStopsWithItsContext(t *testing.T) {
	devs := []rdma.Device{{Index: 1, Name: "rxe0"}}
	var dumps int
	c := bigKernel(t, 64, 16, &dumps)
	n := 0
	if err := c.EachResource(rdma.ResPD, devs, func(r *rdma.Resource) {
		if r.PDN != uint32(n) || r.DevName != "rxe0" {
			t.Fatalf("resource %d: %+v", n, r)
		}
		n++
	}); err != nil || n != 64*16 {
		t.Fatalf("a whole dump: %d resources, %v; want %d", n, err, 64*16)
	}
	c.Close()

	c = bigKernel(t, 64, 16, &dumps)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer c.Bind(ctx)()
	n = 0
	err := c.EachResource(rdma.ResPD, devs, func(*rdma.Resource) {
		if n++; n == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled dump: %v, want context.Canceled", err)
	}
	if n != 16 {
		t.Errorf("a dump cancelled at its 3rd object gave %d, want the rest of that message alone (16)", n)
	}
}
