package formats

import (
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/rdma"
)

// EventObject lays out a traced event with the keys of `rdmatrace trace -j`:
// iproute2's names wherever the same thing exists. pid is the kernel's
// notion (the creating thread, as `rdma res` shows it), tgid its process
// when that differs.
func EventObject(e *rdma.Event) Object { return AppendEventObject(make(Object, 0, 20), e) }

// AppendEventObject is EventObject into a reused slice, for the hot path.
func AppendEventObject(o Object, e *rdma.Event) Object {
	o = append(o, timeField("time", e.Time))
	o = o.str("event", e.Kind.String())
	if e.Func != "" {
		o = o.str("func", e.Func)
	}
	if e.Has(rdma.EvHasRes) {
		o = o.str("res", e.Res.String())
	}
	if e.Has(rdma.EvHasDev) {
		o = o.str("ifname", e.DevName)
	}
	if e.Has(rdma.EvHasPort) {
		o = o.num("port", uint64(e.Port))
	}
	if e.Has(rdma.EvHasRes) && (e.ID != 0 || e.Kind == rdma.EvCreate || e.Kind == rdma.EvDestroy || e.Kind == rdma.EvExists) {
		o = o.num("id", uint64(e.ID))
	}
	if e.Has(rdma.EvHasQP) {
		o = o.num("lqpn", uint64(e.LQPN)).str("type", e.QPType.String())
	}
	if e.Has(rdma.EvHasState) {
		o = o.str("state", e.StateName(false))
	}
	if e.Has(rdma.EvHasPrevState) {
		o = o.str("prev-state", e.StateName(true))
	}
	if e.Has(rdma.EvHasCM) {
		o = o.str("cm-event", e.CMEvent.String())
	}
	if e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMQPCreate {
		o = append(o, Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
		if n := statusName(e); n != "" {
			o = o.str("status-name", n)
		}
	}
	if e.Has(rdma.EvHasAddr) {
		o = o.str("ps", e.PS.String())
		o = o.str("src-addr", IPRouteAddr(e.Src.Addr().String(), e.Src.Port()))
		if e.Dst.IsValid() {
			o = o.str("dst-addr", IPRouteAddr(e.Dst.Addr().String(), e.Dst.Port()))
		}
	}
	if e.Has(rdma.EvHasOwner) {
		o = o.num("pid", uint64(e.Owner.TID))
		if e.Owner.PID != e.Owner.TID {
			o = o.num("tgid", uint64(e.Owner.PID))
		}
		o = o.str("comm", e.Owner.Comm)
		if e.OwnerCgroup != 0 {
			o = o.num("cgroup-id", e.OwnerCgroup)
		}
	}
	if e.Owner.KernName != "" {
		o = o.str("kern-name", e.Owner.KernName)
	}
	if e.Actor.PID != 0 || e.Actor.Comm != "" {
		if !e.Has(rdma.EvHasOwner) || e.Actor.TID != e.Owner.TID {
			o = o.num("actor-pid", uint64(e.Actor.TID)).str("actor-comm", e.Actor.Comm)
		}
	}
	if c := e.Cleanup(); c != "" {
		o = o.str("cleanup", c)
	}
	return appendSpanFields(o, e)
}

// appendSpanFields adds what spans and off-CPU spells carry, and an MR's
// size: dur-us, size, and for a spell wait-us (wakeup to running again),
// preempted, and who ran instead.
func appendSpanFields(o Object, e *rdma.Event) Object {
	if e.Has(rdma.EvHasDur) {
		o = append(o, Field{Key: "dur-us", Kind: Micros, Num: e.Dur})
	}
	if e.Has(rdma.EvHasSize) {
		o = o.num("size", e.Size)
	}
	if e.Kind == rdma.EvSpan && e.Status != 0 {
		o = append(o, Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
	}
	if e.Kind == rdma.EvOffCPU {
		o = append(o, Field{Key: "wait-us", Kind: Micros, Num: e.Wait})
		o = append(o, Field{Key: "preempted", Kind: Bool, Num: b2u(e.Has(rdma.EvPreempted))})
		o = o.num("next-pid", uint64(e.Next.TID)).str("next-comm", e.Next.Comm)
	}
	return o
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// spanWhat is the human view's description of a span or spell.
func spanWhat(e *rdma.Event, what []string) []string {
	switch e.Kind {
	case rdma.EvSpan:
		what = append(what, e.Func, durText(e.Dur))
		if e.Status != 0 {
			what = append(what, "status "+strconv.Itoa(int(e.Status)))
		}
	case rdma.EvOffCPU:
		how := "asleep"
		if e.Has(rdma.EvPreempted) {
			how = "preempted"
		}
		what = append(what, how, durText(e.Dur))
		if e.Wait != 0 {
			what = append(what, "(runq "+durText(e.Wait)+")")
		}
		what = append(what, "instead: "+Sanitize(e.Next.Comm)+"["+strconv.FormatUint(uint64(e.Next.TID), 10)+"]")
		if e.Actor.TID != e.Next.TID && e.Actor.TID != e.Owner.TID && e.Actor.Comm != "" {
			what = append(what, "... "+Sanitize(e.Actor.Comm)+"["+strconv.FormatUint(uint64(e.Actor.TID), 10)+"]")
		}
	}
	if e.Has(rdma.EvHasSize) {
		what = append(what, "size "+strconv.FormatUint(e.Size, 10))
	}
	return what
}

// durText writes ns as µs or ms, in ASCII ("us": terminals without UTF-8).
func durText(ns uint64) string {
	if ns >= 10_000_000 {
		return string(appendSecs(nil, ns/1000)) + "ms"
	}
	return string(appendSecs(nil, ns)) + "us"
}

// EventLine is the human view of an event: one aligned line.
//
//	14:03:07.123456 create        qp     rxe0/1   lqpn 17 RC RESET          rping[812]
func EventLine(e *rdma.Event) string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("15:04:05.000000"))
	b.WriteByte(' ')
	pad(&b, e.Kind.String(), 17)
	res := ""
	if e.Has(rdma.EvHasRes) {
		res = e.Res.String()
	}
	pad(&b, res, 7)
	where := "-"
	if e.Has(rdma.EvHasDev) {
		where = Sanitize(e.DevName)
		if e.Has(rdma.EvHasPort) {
			where += "/" + strconv.FormatUint(uint64(e.Port), 10)
		}
	}
	pad(&b, where, 10)
	var what []string
	if e.Has(rdma.EvHasRes) && e.ID != 0 && e.Res != rdma.ResQP { // a QP's id is its lqpn
		what = append(what, "id "+strconv.FormatUint(uint64(e.ID), 10))
	}
	if e.Has(rdma.EvHasQP) {
		what = append(what, "lqpn "+strconv.FormatUint(uint64(e.LQPN), 10), e.QPType.String())
	}
	if e.Has(rdma.EvHasState) {
		s := e.StateName(false)
		if e.Has(rdma.EvHasPrevState) {
			s = e.StateName(true) + "->" + s
		}
		what = append(what, s)
	}
	if e.Has(rdma.EvHasCM) {
		what = append(what, e.CMEvent.String())
	}
	if e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMQPCreate {
		if n := statusName(e); n != "" {
			what = append(what, statusText(e.Status, n))
		}
	}
	if e.Has(rdma.EvHasAddr) && e.Src.IsValid() {
		a := IPRouteAddr(e.Src.Addr().String(), e.Src.Port())
		if e.Dst.IsValid() && !e.Dst.Addr().IsUnspecified() {
			a += ">" + IPRouteAddr(e.Dst.Addr().String(), e.Dst.Port())
		}
		what = append(what, a)
	}
	what = spanWhat(e, what)
	pad(&b, strings.Join(what, " "), 44)
	switch {
	case e.Owner.KernName != "":
		b.WriteString("[" + Sanitize(e.Owner.KernName) + "]")
	case e.Has(rdma.EvHasOwner):
		b.WriteString(Sanitize(e.Owner.Comm) + "[" + strconv.FormatUint(uint64(e.Owner.TID), 10) + "]")
	}
	if e.Actor.PID != 0 && e.Kind != rdma.EvOffCPU && (!e.Has(rdma.EvHasOwner) || e.Actor.TID != e.Owner.TID) {
		b.WriteString(" by " + Sanitize(e.Actor.Comm) + "[" + strconv.FormatUint(uint64(e.Actor.TID), 10) + "]")
	}
	if c := e.Cleanup(); c != "" {
		b.WriteString(" (" + c + " cleanup)")
	}
	return b.String()
}

// statusName is CMStatusName of a CM event's or cm_qp_create's status.
func statusName(e *rdma.Event) string {
	ev := e.CMEvent
	if !e.Has(rdma.EvHasCM) {
		ev = ^rdma.CMEvent(0) // cm_qp_create: an errno, never a reject reason
	}
	return rdma.CMStatusName(ev, e.Status)
}

// statusText is the human view of a status and its name: "status
// ECONNREFUSED", "status 28 (consumer defined)", "status 5".
func statusText(status int32, name string) string {
	num := strconv.Itoa(int(status))
	switch {
	case name == num:
		return "status " + num
	case status < 0:
		return "status " + name
	}
	return "status " + num + " (" + name + ")"
}

func pad(b *strings.Builder, s string, w int) {
	b.WriteString(s)
	for i := len(s); i < w; i++ {
		b.WriteByte(' ')
	}
	b.WriteByte(' ')
}
