package formats

import (
	"fmt"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// KernelReportObject lays out a leak or hang report found in a kernel log
// (`rdmatrace leaks --log`): "report" is "kernel-log", "kind" what it is.
func KernelReportObject(r *rdma.KernelReport) Object {
	o := Object{}.str("report", "kernel-log").str("kind", r.Kind.String()).
		str("source", r.Source).num("line", uint64(r.Line)).str("stamp", r.Stamp)
	switch r.Kind {
	case rdma.KernRestrackNamed:
		if r.Device != "" { // a grepped or cut log may lack the line naming it
			o = o.str("ifname", r.Device)
		}
		o = o.str("res", r.Res.String())
		if r.Owner.Kernel() {
			o = o.str("kern-name", r.Owner.KernName)
		} else {
			o = o.str("comm", r.Owner.Comm)
		}
		return o
	case rdma.KernHungUnregister:
		o = o.num("pid", uint64(r.PID)).str("comm", r.Task).num("blocked", uint64(r.BlockedSecs)).str("waits-in", r.WaitsIn)
	case rdma.KernQPErrSyndrome:
		o = o.str("ifname", r.Device).num("port", uint64(r.Port)).num("lqpn", uint64(r.QPN)).str("status-msg", r.StatusMsg)
		if r.HasSyndrome {
			o = o.str("cqe-syndrome", hex(uint32(r.Syndrome)))
		}
		if r.HasWCStatus {
			o = o.str("wc-status", r.WCStatus.String())
		}
		o = o.str("vendor-syndrome", hex(r.VendorSyndrome)).str("hw-syndrome-type", hex(r.HWSyndromeType)).
			str("hw-syndrome", hex(r.HWSyndrome))
		if qp := r.QP; qp != nil {
			// The recording's QP: its owner, and when it was made.
			o = append(o, timeField("qp-created", qp.Time))
			if qp.Given(rdma.HasQPType) {
				o = o.str("type", qp.QPType.String())
			}
			if qp.Has(rdma.EvHasOwner) {
				o = o.num("pid", uint64(qp.Owner.PID)).str("comm", qp.Owner.Comm).place(qp.Owner.Place)
			} else if qp.Owner.KernName != "" {
				o = o.str("kern-name", qp.Owner.KernName)
			}
		}
		return o
	default:
		o = o.num("pid", uint64(r.PID)).str("comm", r.Task).str("location", r.Location).str("function", r.Function)
	}
	if r.Truncated {
		o = o.boolean("truncated", true)
	}
	return o
}

// KernelReportLine is the human view of a kernel log report.
func KernelReportLine(r *rdma.KernelReport) string {
	at := Sanitize(r.Source) + ":" + strconv.Itoa(r.Line) + ": " + Sanitize(r.Stamp) + " "
	task := Sanitize(r.Task) + "[" + strconv.Itoa(r.PID) + "]"
	switch r.Kind {
	case rdma.KernRestrackNamed:
		who := "process " + Sanitize(r.Owner.Comm)
		if r.Owner.Kernel() {
			who = "module " + Sanitize(r.Owner.KernName)
		}
		if r.Device == "" {
			return at + fmt.Sprintf("restrack: a %s of %s was never freed (the log does not say on which device)", r.Res, who)
		}
		return at + fmt.Sprintf("restrack: %s: a %s of %s was never freed", Sanitize(r.Device), r.Res, who)
	case rdma.KernHungUnregister:
		return at + fmt.Sprintf("%s blocked for more than %d s in %s: a device's unregistration waits", task, r.BlockedSecs, Sanitize(r.WaitsIn))
	case rdma.KernQPErrSyndrome:
		line := at + Sanitize(r.SyndromeSentence())
		if r.QP != nil {
			line += "\n  the QP of " + owner(r.QP) + ", created " + r.QP.Time.UTC().Format("2006-01-02 15:04:05.000000")
		}
		return line
	case rdma.KernDriverWarning:
		return at + fmt.Sprintf("WARNING at %s (%s) by %s: the driver had objects left when the device was freed%s",
			Sanitize(r.Location), Sanitize(r.Function), task, truncated(r))
	}
	return at + fmt.Sprintf("WARNING at %s (%s) by %s: a device was freed with resources still tracked; the kernel does not say which%s",
		Sanitize(r.Location), Sanitize(r.Function), task, truncated(r))
}

func hex(v uint32) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

func truncated(r *rdma.KernelReport) string {
	if r.Truncated {
		return " (report cut short)"
	}
	return ""
}
