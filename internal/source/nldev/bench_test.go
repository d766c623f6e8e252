package nldev

import (
	"testing"

	"github.com/mdlayher/netlink"

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
