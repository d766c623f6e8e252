package nldev

import (
	"runtime"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// BenchmarkDecodeQPDump decodes a dump of 1000 user RC QPs, the size the
// guest benchmark holds open.
func BenchmarkDecodeQPDump(b *testing.B) {
	entries := make([]func(*netlink.AttributeEncoder), 1000)
	for i := range entries {
		n := uint32(i + 17)
		entries[i] = func(e *netlink.AttributeEncoder) {
			e.Uint32(attrPortIndex, 1)
			e.Uint32(attrResLQPN, n)
			e.Uint32(attrResPDN, 3)
			e.Uint32(attrResPID, 4242)
			e.Uint32(attrResRQPN, n+1000)
			e.Uint32(attrResRQPSN, 12345)
			e.Uint32(attrResSQPSN, 54321)
			e.Uint8(attrResPathMigState, 0)
			e.Uint8(attrResType, 2)
			e.Uint8(attrResState, 3)
		}
	}
	// The kernel splits a dump into messages of about a page each.
	var msgs []netlink.Message
	var size int64
	for i := 0; i < len(entries); i += 50 {
		m := netlink.Message{Data: dump(b, resTables[rdma.ResQP], entries[i:i+50]...)}
		msgs = append(msgs, m)
		size += int64(len(m.Data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		rs, err := DecodeDump(rdma.ResQP, msgs, false)
		if err != nil || len(rs) != 1000 {
			b.Fatal(len(rs), err)
		}
	}
}

// BenchmarkDump265k reads a device's dump of 265 000 PDs (the review's
// held inventory), 50 a message, as the scrape did before (Resources:
// every object kept) and does now (EachResource: each counted as its
// message is decoded). B/op is what one read allocates; heap-MB, the
// heap in use when it returns (before the next collection).
func BenchmarkDump265k(b *testing.B) {
	const n, per = 265000, 50
	var msgs []netlink.Message
	for i := 0; i < n; i += per {
		var es []func(*netlink.AttributeEncoder)
		for j := range per {
			id := uint32(i + j)
			es = append(es, func(e *netlink.AttributeEncoder) {
				e.Uint32(attrResPDN, id)
				e.Uint32(attrResPID, 4242)
				e.Uint64(attrResUsecnt, 1)
			})
		}
		msgs = append(msgs, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(clientNLDEV<<10 | cmdResPDGet)}, Data: dump(b, resTables[rdma.ResPD], es...)})
	}
	devs := []rdma.Device{{Index: 1, Name: "rxe0"}}
	kernel := func() *Client {
		return NewClient(nltest.Dial(func(reqs []netlink.Message) ([]netlink.Message, error) {
			out := make([]netlink.Message, len(msgs), len(msgs)+1)
			for i, m := range msgs {
				m.Header.Sequence, m.Header.PID, m.Header.Flags = reqs[0].Header.Sequence, reqs[0].Header.PID, netlink.Multi
				out[i] = m
			}
			return append(out, netlink.Message{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi, Sequence: reqs[0].Header.Sequence, PID: reqs[0].Header.PID}}), nil
		}), true)
	}
	peak := func(b *testing.B, read func(c *Client) int) {
		var peakHeap uint64
		b.ReportAllocs()
		for b.Loop() {
			c := kernel()
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if got := read(c); got != n {
				b.Fatalf("%d objects, want %d", got, n)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if d := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc); d > peakHeap {
				peakHeap = d
			}
			c.Close()
		}
		b.ReportMetric(float64(peakHeap)/(1<<20), "heap-MB")
	}
	b.Run("kept", func(b *testing.B) {
		peak(b, func(c *Client) int {
			rs, err := c.Resources(rdma.ResPD, devs)
			if err != nil {
				b.Fatal(err)
			}
			return len(rs)
		})
	})
	b.Run("streamed", func(b *testing.B) {
		peak(b, func(c *Client) int {
			got := 0
			if err := c.EachResource(rdma.ResPD, devs, func(*rdma.Resource) { got++ }); err != nil {
				b.Fatal(err)
			}
			return got
		})
	})
}
