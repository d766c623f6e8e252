package formats

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A QP error syndrome's line: the kernel's words, the syndromes in hex,
// the recording's QP and owner when joined; what the log wrote (device,
// status text) is escaped.
func TestKernelReportLineOfASyndrome(t *testing.T) {
	r := &rdma.KernelReport{Kind: rdma.KernQPErrSyndrome, Source: "dmesg.txt", Line: 3, Stamp: "[  5.100000]", Device: "mlx5_0",
		Port: 1, QPN: 137, StatusMsg: "unrecognized status", VendorSyndrome: 0x41, HWSyndromeType: 0x2, HWSyndrome: 0x1f}
	want := "dmesg.txt:3: [  5.100000] mlx5_0/1 QP 137: an error of CQE syndrome 0x16 or above (the kernel could not name it; vendor syndrome 0x41, hw 0x2/0x1f)"
	if got := KernelReportLine(r); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	qp := &rdma.Event{Kind: rdma.EvCreate, Time: time.Date(2026, 11, 27, 7, 20, 1, 250e6, time.UTC), Flags: rdma.EvHasOwner,
		Resource: rdma.Resource{Owner: rdma.Owner{PID: 4100, Comm: "ib_write_bw"}}}
	r.QP = qp
	if got := KernelReportLine(r); got != want+"\n  the QP of ib_write_bw[4100], created 2026-11-27 07:20:01.250000" {
		t.Errorf("joined: %q", got)
	}
	o := KernelReportObject(r)
	for _, k := range []string{"vendor-syndrome", "hw-syndrome-type", "hw-syndrome", "lqpn", "pid", "comm", "qp-created"} {
		if !hasKey(o, k) {
			t.Errorf("no %q in %v", k, o)
		}
	}
	r.Device, r.StatusMsg, r.QP = "mlx5\x1b[2J", "local\x07 error", nil
	if got := KernelReportLine(r); strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("raw control characters: %q", got)
	}
}

func hasKey(o Object, k string) bool {
	for _, f := range o {
		if f.Key == k {
			return true
		}
	}
	return false
}
