package formats

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// EventObject lays out a traced event with the keys of `rdmatrace trace -j`:
// iproute2's names wherever the same thing exists. pid is the kernel's
// notion (the creating thread, as `rdma res` shows it), tgid its process
// when that differs. Its keys are rdma.EventKeys, the table
// replay.Reader reads recordings back by.
func EventObject(e *rdma.Event) Object { return AppendEventObject(make(Object, 0, 20), e) }

// AppendEventObject is EventObject into a reused slice.
func AppendEventObject(o Object, e *rdma.Event) Object { return appendEvent(o, e) }

// AppendEventJSON appends the event's JSON object, as
// AppendJSON(b, EventObject(e)) writes it, without laying out its fields
// first: trace -j's hot path.
func AppendEventJSON(b []byte, e *rdma.Event) []byte {
	return append(appendEvent(jsonLine(append(b, '{')), e), '}')
}

// appendEvent lays out an event's fields, for an Object or straight into
// a JSON line: one layout for both.
func appendEvent[O fieldAppender[O]](o O, e *rdma.Event) O {
	o = o.field(timeField("time", e.Time))
	o = o.str("event", e.Kind.String())
	switch {
	case e.Kind == rdma.EvSpan && e.Span.Func != "":
		o = o.str("func", e.Span.Func)
	case e.Kind == rdma.EvPortBusy && e.PortBusy.Op != "":
		o = o.str("func", e.PortBusy.Op)
	case e.Kind == rdma.EvCallFail:
		o = o.str("func", e.CallFail.Op)
	}
	if e.Has(rdma.EvHasRes) {
		o = o.str("res", e.Type.String())
	}
	if e.Has(rdma.EvHasDev) {
		o = o.keyAlways(&e.Resource, &rdma.KeyIfname)
	}
	if e.Given(rdma.HasPort) {
		o = o.keyAlways(&e.Resource, &rdma.KeyPort)
	}
	if e.Has(rdma.EvHasRes) && (e.ID != 0 || e.Kind == rdma.EvCreate || e.Kind == rdma.EvDestroy || e.Kind == rdma.EvExists) {
		o = o.num("id", uint64(e.ID))
	}
	if e.Given(rdma.HasLQPN) {
		o = o.keyAlways(&e.Resource, &rdma.KeyLQPN).str(rdma.KeyType.Name, e.QPType.String())
	}
	if e.Given(rdma.HasState) {
		o = o.str(rdma.KeyState.Name, e.StateName(false))
	}
	if e.Has(rdma.EvHasPrevState) {
		o = o.str("prev-state", e.StateName(true))
	}
	if e.Has(rdma.EvHasCM) {
		o = o.str("cm-event", e.CMEvent.String())
	}
	if e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMQPCreate {
		o = o.field(Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
		if n := statusName(e); n != "" {
			o = o.str("status-name", n)
		}
	}
	if e.Given(rdma.HasSrcAddr) {
		o = o.str(rdma.KeyPS.Name, e.PS.String()).str(rdma.KeySrcAddr.Name, rdma.IPRouteAddr(e.Src))
		if e.Dst.IsValid() {
			o = o.str(rdma.KeyDstAddr.Name, rdma.IPRouteAddr(e.Dst))
		}
	}
	if e.Has(rdma.EvHasOwner) {
		o = o.num(rdma.KeyPID.Name, uint64(e.Owner.TID))
		if e.Owner.PID != e.Owner.TID {
			o = o.num("tgid", uint64(e.Owner.PID))
		}
		o = o.str(rdma.KeyComm.Name, e.Owner.Comm)
		if e.OwnerCgroup != 0 {
			o = o.num("cgroup-id", e.OwnerCgroup)
		}
		o = o.place(e.Owner.Place)
	}
	if e.Owner.KernName != "" && !e.Has(rdma.EvHasOwner) {
		// A kernel owner is its module, under comm and without a pid, as
		// iproute2's rdma -j res prints RDMA_NLDEV_ATTR_RES_KERN_NAME.
		o = o.str(rdma.KeyComm.Name, e.Owner.KernName)
	}
	if e.Actor.PID != 0 || e.Actor.Comm != "" {
		if !e.Has(rdma.EvHasOwner) || e.Actor.TID != e.Owner.TID {
			o = o.num("actor-pid", uint64(e.Actor.TID)).str("actor-comm", e.Actor.Comm)
		}
	}
	if c := e.Cleanup(); c != "" {
		o = o.str("cleanup", c)
	}
	if e.Stack != nil {
		o = appendStack(o, e.Stack)
	}
	o = appendSpanFields(o, e)
	// A failed rdma_cm step in words (the other failures' kinds say
	// what they are by their keys).
	if e.Kind == rdma.EvCMEventHandler || e.Kind == rdma.EvCallFail {
		if f, ok := e.Failure(); ok {
			o = o.str("why", f.Why)
		}
	}
	return o
}

// appendSpanFields adds what spans and off-CPU spells carry, and an MR's
// size: dur-us, size, and for a spell wait-us (wakeup to running again),
// preempted, and who ran instead.
func appendSpanFields[O fieldAppender[O]](o O, e *rdma.Event) O {
	if e.Has(rdma.EvHasDur) {
		o = o.field(Field{Key: "dur-us", Kind: Micros, Num: e.Length()})
	}
	if e.Has(rdma.EvHasSize) {
		o = o.num("size", e.Size)
	}
	if e.Kind == rdma.EvSpan && e.Status != 0 {
		o = o.field(Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
	}
	if e.Kind == rdma.EvPortBusy {
		o = o.field(Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
		o = o.str("status-name", "EADDRINUSE")
		if e.PortBusy.Holders != nil {
			o = o.list("holders", e.PortBusy.Holders)
		}
		if e.PortBusy.Suppressed > 0 {
			o = o.num("suppressed", uint64(e.PortBusy.Suppressed))
		}
	}
	if e.Kind == rdma.EvSMCFallback {
		o = o.num("fallback", uint64(uint32(e.Status))).str("fallback-reason", rdma.SMCReason(uint32(e.Status)))
		if e.SMCFallback.Inode != 0 {
			o = o.num("inode", e.SMCFallback.Inode)
		}
	}
	// An SMC-R link's event, or an [smc] QP that leaks named by its link.
	if e.Kind.IsSMCLink() || e.SMC.HasLGR {
		if e.SMC.HasLGR {
			o = o.str("lgr-id", rdma.LGRID(e.SMC.LGR)).str("role", e.SMC.Role)
		}
		o = o.num("link-id", uint64(e.SMC.ID))
		if e.SMC.State != "" {
			o = o.str("link-state", e.SMC.State)
		}
		if e.Kind.IsSMCLink() && e.Status != 0 {
			o = o.field(Field{Key: "status", Kind: Int, Num: uint64(int64(e.Status))})
		}
	}
	if e.Kind == rdma.EvAsync || e.Kind == rdma.EvQPError {
		o = appendFailureFields(o, e)
	}
	if e.Kind == rdma.EvCallFail {
		o = appendCallFailFields(o, e)
	}
	if e.Kind == rdma.EvGIDChange {
		o = appendGIDFields(o, e)
	}
	if e.Kind == rdma.EvOffCPU {
		o = o.field(Field{Key: "wait-us", Kind: Micros, Num: e.OffCPU.Wait})
		o = o.field(Field{Key: "preempted", Kind: Bool, Num: b2u(e.Has(rdma.EvPreempted))})
		o = o.num("next-pid", uint64(e.OffCPU.Next.TID)).str("next-comm", e.OffCPU.Next.Comm)
	}
	if e.Given(rdma.HasNetdev) && e.Kind.IsDevice() {
		o = o.str("netdev", e.Netdev)
	}
	if e.Has(rdma.EvPolled) {
		o = o.field(Field{Key: "polled", Kind: Bool, Num: 1})
	}
	if e.Kind == rdma.EvQPAttr {
		o = appendQPAttrFields(o, e)
	}
	return o
}

// appendFailureFields adds what an async event or a QP error says: the IB
// event, which QP error it is, the completions' status and count, the QP's
// peer, and a port event's objects.
func appendFailureFields[O fieldAppender[O]](o O, e *rdma.Event) O {
	f := &e.Fault
	if e.Kind == rdma.EvAsync {
		o = o.str("ib-event", f.IBEvent.String())
	} else {
		o = o.str("qp-error", f.Report.String())
		if f.Report != rdma.QPErrDriver {
			o = o.str("wc-status", f.WCStatus.String()).num("count", f.Count)
		}
	}
	if f.HasPeer() {
		o = o.str("rgid", f.PeerGID.String()).num("rqpn", uint64(f.PeerQPN))
	}
	if f.OnPort != nil {
		o = o.list("on-port", f.OnPort)
	}
	return o
}

// appendFailure appends the human view of an async event or a QP error.
func appendFailure(b []byte, col int, e *rdma.Event) []byte {
	f := &e.Fault
	switch {
	case e.Kind == rdma.EvAsync:
		b = append(word(b, col), f.IBEvent.String()...)
	case f.Report == rdma.QPErrDriver:
		b = append(word(b, col), "ERR by its driver"...)
	case f.Report == rdma.QPErrFirst:
		b = append(append(append(append(word(b, col), "first error "...), f.WCStatus.String()...), " ("...), f.WCStatus.Message()...)
		b = append(b, ')')
	default:
		b = strconv.AppendUint(word(b, col), f.Count, 10)
		b = append(append(append(b, ' '), f.WCStatus.String()...), " in all"...)
	}
	if f.HasPeer() {
		b = strconv.AppendUint(append(append(append(word(b, col), "peer "...), f.PeerGID.String()...), " qpn "...), uint64(f.PeerQPN), 10)
	}
	switch {
	case f.OnPort == nil:
	case len(f.OnPort) == 0:
		b = append(b, ": no objects on it"...)
	default:
		b = append(b, ": "...)
		for i, s := range f.OnPort {
			if i > 0 {
				b = append(b, "; "...)
			}
			b = append(b, Sanitize(s)...)
		}
	}
	return b
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// appendSpan appends the human view's description of a span or an
// off-CPU spell to the column that starts at col.
func appendSpan(b []byte, col int, e *rdma.Event) []byte {
	switch e.Kind {
	case rdma.EvAsync, rdma.EvQPError:
		b = appendFailure(b, col, e)
	case rdma.EvCallFail:
		b = append(word(b, col), Sanitize(rdma.CallFailWhy(e))...)
	case rdma.EvGIDChange:
		b = append(word(b, col), Sanitize(rdma.GIDChangeText(&e.GID))...)
	case rdma.EvSMCFallback:
		b = append(append(word(b, col), "fallback "...), rdma.SMCReason(uint32(e.Status))...)
	case rdma.EvSMCLinkCreate, rdma.EvSMCLinkDown, rdma.EvSMCLinkDestroy:
		if e.SMC.HasLGR {
			b = append(append(append(append(word(b, col), "lgr "...), rdma.LGRID(e.SMC.LGR)...), ' '), e.SMC.Role...)
		}
		b = strconv.AppendUint(append(word(b, col), "link "...), uint64(e.SMC.ID), 10)
		if e.SMC.State != "" {
			b = append(word(b, col), e.SMC.State...)
		}
		if e.Status != 0 {
			b = strconv.AppendInt(label(b, col, "status"), int64(e.Status), 10)
		}
	case rdma.EvPortBusy:
		b = append(append(word(b, col), Sanitize(e.PortBusy.Op)...), " EADDRINUSE"...)
		switch {
		case e.PortBusy.Holders == nil:
		case len(e.PortBusy.Holders) == 0:
			b = append(b, ", held by no one any more"...)
		default:
			b = append(b, ", held by "...)
			for i, h := range e.PortBusy.Holders {
				if i > 0 {
					b = append(b, "; "...)
				}
				b = append(b, Sanitize(h)...)
			}
		}
		if e.PortBusy.Suppressed > 0 {
			b = append(strconv.AppendUint(append(b, " (after "...), uint64(e.PortBusy.Suppressed), 10), " like it held back)"...)
		}
	case rdma.EvSpan:
		b = appendDur(append(append(word(b, col), Sanitize(e.Span.Func)...), ' '), e.Span.Dur)
		if e.Status != 0 {
			b = strconv.AppendInt(append(b, " status="...), int64(e.Status), 10)
		}
	case rdma.EvOffCPU:
		how := "asleep"
		if e.Has(rdma.EvPreempted) {
			how = "preempted"
		}
		b = appendDur(append(append(word(b, col), how...), ' '), e.OffCPU.Dur)
		if e.OffCPU.Wait != 0 {
			b = append(appendDur(append(b, " (runq "...), e.OffCPU.Wait), ')')
		}
		b = appendTask(append(b, " instead: "...), e.OffCPU.Next.Comm, e.OffCPU.Next.TID)
		if e.Actor.TID != e.OffCPU.Next.TID && e.Actor.TID != e.Owner.TID && e.Actor.Comm != "" {
			b = appendTask(append(b, " ... "...), e.Actor.Comm, e.Actor.TID)
		}
	case rdma.EvQPAttr:
		b = appendQPAttr(b, col, e)
	}
	if e.Has(rdma.EvHasSize) {
		b = strconv.AppendUint(label(b, col, "size"), e.Size, 10)
	}
	return b
}

// appendDur writes ns as µs or ms, in ASCII ("us": terminals without UTF-8).
func appendDur(b []byte, ns uint64) []byte {
	if ns >= 10_000_000 {
		return append(appendSecs(b, ns/1000), "ms"...)
	}
	return append(appendSecs(b, ns), "us"...)
}

// EventLine is the human view of an event: one line in fixed-width
// columns (EventHeader names them), the owner before the detail so that
// a long detail moves nothing after it, the detail's parts labelled.
//
//	14:03:07.123456 create            qp      rxe0/1     rping[812]               lqpn=17 type=RC state=RESET
func EventLine(e *rdma.Event) string { return string(AppendEventLine(make([]byte, 0, 128), e)) }

// EventText is the human line without its time and its columns' padding,
// for sinks that carry the time apart (an OTLP log record).
func EventText(e *rdma.Event) string {
	return strings.Join(strings.Fields(string(appendEventLine(make([]byte, 0, 128), e, EventView{Stamp: StampNone}, time.Time{}))), " ")
}

// AppendEventLine is EventLine appended to b, for the hot path: it
// allocates nothing but an address's text.
func AppendEventLine(b []byte, e *rdma.Event) []byte {
	return appendEventLine(b, e, EventView{}, time.Time{})
}

// EventView is how the human view shows events: their time (Stamp), what
// exists at start (Snapshot), and the threads (Threads: -d, -v).
type EventView struct {
	Stamp    Stamp
	Snapshot SnapshotView
	// Threads shows the thread that created an object (tid=) and a thread
	// of the owner's own process that acted (by=): without it an object
	// is its process's, as ps and ss -p show, whichever thread made it.
	Threads bool
}

// SnapshotView is what the human view does with the resources that exist
// at start ("exists" events): one line of counts (the default, as quiet as
// rdma monitor), each one (--snapshot), or nothing (--no-snapshot). -j
// and recordings have each one: replaying a recording needs them.
type SnapshotView uint8

const (
	SnapshotSummary SnapshotView = iota
	SnapshotList
	SnapshotHide
)

// Stamp is how the human view times an event (--timestamp).
type Stamp uint8

const (
	StampAbsolute Stamp = iota // the time of day, local: 14:03:07.123456
	StampRelative              // seconds since the first event:   2.001234
	StampDate                  // the date too: 2026-11-24 14:03:07.123456
	StampNone                  // no time
)

// ParseStamp reads a --timestamp value.
func ParseStamp(s string) (Stamp, error) {
	for i, name := range stampNames {
		if s == name {
			return Stamp(i), nil
		}
	}
	return 0, fmt.Errorf("unknown timestamp %q: valid are %s", s, strings.Join(stampNames[:], ", "))
}

var stampNames = [...]string{"absolute", "relative", "date", "none"}

// The human view's columns: their widths (the detail, last, has none).
const (
	colEvent = 17 // the longest kind, dev_unregistered, and a space
	colRes   = 7
	colDev   = 10
	colOwner = 24 // comm (15 bytes) and [pid] up to 7 digits
)

// stampWidth is how wide the time column is.
var stampWidth = [...]int{StampAbsolute: 15, StampRelative: 15, StampDate: 26, StampNone: 0}

// EventHeader is the line above the human view's events: the columns'
// names, aligned as EventLine writes them.
func EventHeader(stamp Stamp) string {
	var b []byte
	if w := stampWidth[stamp]; w > 0 {
		b = padTo(append(b, "TIME"...), 0, w)
	}
	col := len(b)
	b = padTo(append(b, "EVENT"...), col, colEvent)
	col = len(b)
	b = padTo(append(b, "RES"...), col, colRes)
	col = len(b)
	b = padTo(append(b, "DEV"...), col, colDev)
	col = len(b)
	b = padTo(append(b, "OWNER"...), col, colOwner)
	return string(append(b, "DETAIL"...))
}

// process is a task's process (thread group), its thread when that is
// unknown.
func process(t *rdma.Owner) uint32 {
	if t.PID != 0 {
		return t.PID
	}
	return t.TID
}

// label starts a labelled part of the detail: " key=".
func label(b []byte, col int, key string) []byte {
	return append(append(word(b, col), key...), '=')
}

// appendEventLine writes e's line; result, when not nil, is the status
// its handler returned (cm_event_done's, merged into cm_event_handler's
// line).
func appendEventLine(b []byte, e *rdma.Event, v EventView, first time.Time) []byte {
	return appendEventLineResult(b, e, v, first, nil)
}

func appendEventLineResult(b []byte, e *rdma.Event, v EventView, first time.Time, result *int32) []byte {
	start := len(b)
	switch v.Stamp {
	case StampAbsolute:
		b = append(e.Time.Local().AppendFormat(b, "15:04:05.000000"), ' ')
	case StampDate:
		b = append(e.Time.Local().AppendFormat(b, "2006-01-02 15:04:05.000000"), ' ')
	case StampRelative:
		// Right-aligned, as wide as the time of day up to 99999 s.
		var tmp [32]byte
		val := strconv.AppendFloat(tmp[:0], e.Time.Sub(first).Seconds(), 'f', 6, 64)
		for i := len(val); i < 15; i++ {
			b = append(b, ' ')
		}
		b = append(append(b, val...), ' ')
	}
	col := len(b)
	b = padTo(append(b, e.Kind.String()...), col, colEvent)
	col = len(b)
	if e.Has(rdma.EvHasRes) {
		b = append(b, e.Type.String()...)
	}
	b = padTo(b, col, colRes)
	col = len(b)
	if e.Has(rdma.EvHasDev) {
		b = append(b, Sanitize(e.DevName)...)
		if e.Given(rdma.HasPort) {
			b = strconv.AppendUint(append(b, '/'), uint64(e.Port), 10)
		}
	} else {
		b = append(b, '-')
	}
	b = padTo(b, col, colDev)
	col = len(b)
	owned := e.Has(rdma.EvHasOwner) && e.Owner.KernName == ""
	switch {
	case e.Owner.KernName != "":
		b = append(append(append(b, '['), Sanitize(e.Owner.KernName)...), ']')
	case owned:
		// The process, as ps and ss -p name an owner: its threads' objects
		// are its own (the thread with Threads, in the detail).
		b = appendTask(b, e.Owner.Comm, process(&e.Owner))
	default:
		b = append(b, '-')
	}
	b = padTo(b, col, colOwner)
	col = len(b)
	if owned && v.Threads && e.Owner.TID != 0 && e.Owner.TID != process(&e.Owner) {
		b = strconv.AppendUint(label(b, col, "tid"), uint64(e.Owner.TID), 10)
	}
	if e.Has(rdma.EvHasRes) && e.ID != 0 && e.Type != rdma.ResQP { // a QP's id is its lqpn
		b = strconv.AppendUint(label(b, col, "id"), uint64(e.ID), 10)
	}
	if e.Given(rdma.HasLQPN) {
		b = strconv.AppendUint(label(b, col, "lqpn"), uint64(e.LQPN), 10)
		b = append(label(b, col, "type"), e.QPType.String()...)
	}
	if e.Given(rdma.HasState) {
		if e.Has(rdma.EvHasPrevState) {
			b = append(append(append(label(b, col, "from"), e.StateName(true)...), " to="...), e.StateName(false)...)
		} else {
			b = append(label(b, col, "state"), e.StateName(false)...)
		}
	}
	if e.Has(rdma.EvHasCM) {
		b = append(label(b, col, "event"), e.CMEvent.String()...)
	}
	if e.Kind == rdma.EvCMEventDone {
		// cm_event_done's status is what the program's handler returned.
		result = &e.Status
	} else if e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMQPCreate {
		if n := statusName(e); n != "" {
			b = append(word(b, col), statusText(e.Status, n)...)
		}
	}
	if result != nil {
		b = strconv.AppendInt(label(b, col, "result"), int64(*result), 10)
	}
	if f, ok := e.Failure(); ok && e.Kind == rdma.EvCMEventHandler {
		// A failed rdma_cm step in words, where its event is delivered.
		b = append(append(append(b, ": "...), Sanitize(f.Why)...), ';')
	}
	if e.Given(rdma.HasSrcAddr) && e.Src.IsValid() {
		b = strconv.AppendUint(append(e.Src.Addr().AppendTo(label(b, col, "src")), ':'), uint64(e.Src.Port()), 10)
		if e.Dst.IsValid() && !e.Dst.Addr().IsUnspecified() {
			b = strconv.AppendUint(append(e.Dst.Addr().AppendTo(append(b, " dst="...)), ':'), uint64(e.Dst.Port()), 10)
		}
	}
	b = appendSpan(b, col, e)
	if c := ContainerName(e.Owner.Place); c != "" && owned {
		b = append(label(b, col, "container"), c...)
	}
	if by := actorShown(e, v.Threads); by != 0 && e.Kind != rdma.EvOffCPU {
		b = appendTask(label(b, col, "by"), e.Actor.Comm, by)
	}
	if c := e.Cleanup(); c != "" {
		b = append(label(b, col, "cleanup"), c...)
	}
	if e.Given(rdma.HasNetdev) && e.Kind.IsDevice() {
		b = append(label(b, col, "netdev"), Sanitize(e.Netdev)...)
	}
	if e.Has(rdma.EvPolled) {
		// Found by comparing two dumps, not seen happening.
		b = append(word(b, col), "(polled)"...)
	}
	return trimSpaces(b, start)
}

// actorShown is the id by= names the acting task by, or 0 to leave it
// out: a task of another process than the owner's, by its process (a
// kworker's is itself); with threads, any other thread, by its own id.
func actorShown(e *rdma.Event, threads bool) uint32 {
	a := &e.Actor
	if a.PID == 0 && a.TID == 0 {
		return 0
	}
	if !e.Has(rdma.EvHasOwner) {
		if threads {
			return a.TID
		}
		return process(a)
	}
	switch {
	case threads && a.TID != e.Owner.TID:
		return a.TID
	case process(a) != process(&e.Owner):
		return process(a)
	}
	return 0
}

// trimSpaces drops the padding a line with an empty detail would end in.
func trimSpaces(b []byte, col int) []byte {
	for len(b) > col && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// statusName is CMStatusName of a CM event's or cm_qp_create's status.
func statusName(e *rdma.Event) string {
	ev := e.CMEvent
	if !e.Has(rdma.EvHasCM) {
		ev = ^rdma.CMEvent(0) // cm_qp_create: an errno, never a reject reason
	}
	return rdma.CMStatusName(ev, e.Status)
}

// statusText is the human view of a status and its name: "status=ECONNREFUSED",
// "status=28 (consumer defined)", "status=5".
func statusText(status int32, name string) string {
	num := strconv.Itoa(int(status))
	switch {
	case name == num:
		return "status=" + num
	case status < 0:
		return "status=" + name
	}
	return "status=" + num + " (" + name + ")"
}

// padTo pads the column that starts at col to w bytes, and ends it.
func padTo(b []byte, col, w int) []byte {
	for len(b)-col < w {
		b = append(b, ' ')
	}
	return append(b, ' ')
}

// word separates a word from the one before it in the column at col.
func word(b []byte, col int) []byte {
	if len(b) > col {
		b = append(b, ' ')
	}
	return b
}

// appendTask appends "comm[tid]".
func appendTask(b []byte, comm string, tid uint32) []byte {
	b = append(append(b, Sanitize(comm)...), '[')
	return append(strconv.AppendUint(b, uint64(tid), 10), ']')
}

// EventWriter writes events as `rdmatrace trace` prints them: NDJSON lines
// (-j) or the human view. It reuses its buffers, so that nothing is
// allocated per event but an address's text: this is the path
// tracer.BenchmarkDecodeFilterEncode measures.
//
// The human view is quieter than -j: the resources that exist at start
// are one line of counts unless View.Snapshot says otherwise, an rdma_cm
// event is one line, its cm_event_done's result in cm_event_handler's,
// and a destroy is one line, its destroy_begin left out (one that the
// driver aborts stays; see cmHeld).
type EventWriter struct {
	w    *bufio.Writer
	json bool
	buf  []byte
	// View is how the human view shows events; JSON has every event and
	// field.
	View   EventView
	first  time.Time // the first event's time, for StampRelative
	header bool      // the header line is written
	// existing counts the "exists" events not yet summed up, by type.
	existing  [256]uint64 // by rdma.ResType
	existingN uint64
	held      cmHeld
}

// NewEventWriter writes to w, NDJSON when json is set; call Close (or
// Flush, then Close) at the end.
func NewEventWriter(w io.Writer, json bool) *EventWriter {
	return &EventWriter{w: bufio.NewWriterSize(w, eventBufSize), json: json, buf: make([]byte, 0, 512)}
}

// eventBufSize is how much an EventWriter holds before it writes: a
// write(2) per 4 KiB (bufio's default) was a quarter of the reader's CPU
// under a burst, in system calls (docs/benchmarks.md).
const eventBufSize = 64 << 10

// Write writes one event and its newline.
func (ew *EventWriter) Write(e *rdma.Event) error {
	if ew.json {
		ew.buf = append(AppendEventJSON(ew.buf[:0], e), '\n')
		_, err := ew.w.Write(ew.buf)
		return err
	}
	if ew.first.IsZero() {
		ew.first = e.Time
	}
	if e.Kind == rdma.EvExists && ew.View.Snapshot != SnapshotList {
		if ew.View.Snapshot == SnapshotSummary {
			ew.existing[e.Type]++
			ew.existingN++
		}
		return nil
	}
	ew.sumExisting()
	switch {
	case e.Kind == rdma.EvCMEventHandler || e.Kind == rdma.EvDestroyBegin:
		ew.held.hold(e, time.Now())
	case (e.Kind == rdma.EvCMEventDone || e.Kind == rdma.EvDestroy) && ew.held.done(e):
	case ew.held.waiting():
		ew.held.queue(append([]byte(nil), ew.line(e, nil)...))
	default:
		return ew.writeLine(ew.line(e, nil))
	}
	return ew.release(time.Now(), false)
}

// line renders e's human line (in ew.buf, valid until the next), its
// handler's result when not nil.
func (ew *EventWriter) line(e *rdma.Event, result *int32) []byte {
	ew.buf = appendEventLineResult(ew.buf[:0], e, ew.View, ew.first, result)
	return ew.buf
}

// writeLine writes a line and its newline, the header before the first.
func (ew *EventWriter) writeLine(line []byte) error {
	if !ew.header {
		ew.header = true
		ew.w.WriteString(EventHeader(ew.View.Stamp) + "\n")
	}
	ew.w.Write(line)
	return ew.w.WriteByte('\n') // bufio's errors stick: the first is this one
}

// sumExisting writes the line that counts the "exists" events held back:
// "51 resources existed when tracing started: 10 pd, 12 cq, ...".
func (ew *EventWriter) sumExisting() {
	if ew.existingN == 0 {
		return
	}
	b := strconv.AppendUint(ew.buf[:0], ew.existingN, 10)
	b = append(b, " resources existed when tracing started:"...)
	sep := " "
	for t, c := range ew.existing {
		if c > 0 {
			b = append(strconv.AppendUint(append(b, sep...), c, 10), ' ')
			b = append(b, rdma.ResType(t).String()...)
			sep = ", "
		}
	}
	b = append(b, " (--snapshot lists them)\n"...)
	ew.buf = b
	ew.w.Write(b) // an error sticks, for the next write or flush
	ew.existing, ew.existingN = [256]uint64{}, 0
}

// release writes the held lines that may go: a handler's once its done
// came, or once it waited cmHoldFor (all with force), and the lines
// behind it.
func (ew *EventWriter) release(now time.Time, force bool) error {
	var err error
	for _, h := range ew.held.ready(now, force) {
		line := h.line
		switch {
		case line != nil:
		case h.merged && h.ev.Kind == rdma.EvDestroyBegin:
			line = ew.line(&h.end, nil) // the destroy, where it began
		case h.merged:
			line = ew.line(&h.ev, &h.end.Status)
		default:
			line = ew.line(&h.ev, nil)
		}
		err = ew.writeLine(line)
	}
	return err
}

// Flush writes out buffered events: a handler still waiting for its done
// stays held until cmHoldFor has passed.
func (ew *EventWriter) Flush() error {
	if !ew.json {
		ew.sumExisting()
		_ = ew.release(time.Now(), false)
	}
	return ew.w.Flush()
}

// Close writes out everything, held handlers too.
func (ew *EventWriter) Close() error {
	if !ew.json {
		ew.sumExisting()
		_ = ew.release(time.Now(), true)
	}
	return ew.w.Flush()
}

// cmHoldFor is how long the human view holds a cm_event_handler for its
// cm_event_done (or a destroy_begin for its destroy): the program's
// handler runs between them (ucma's queues the event for user space,
// microseconds); past it the held line is shown alone, and the one that
// ends it gets its own.
const cmHoldFor = 200 * time.Millisecond

// cmMaxHeld bounds the lines held behind a waiting handler.
const cmMaxHeld = 4096

// cmHeld is the human view's queue behind cm_event_handler events that
// wait for their cm_event_done, and destroy_begin events for their
// destroy: lines that came after a waiting handler
// wait behind it, so that the view keeps the events' order.
type cmHeld struct {
	q    []heldLine
	head int // q[head:] is held
}

// heldLine is a rendered line, or a held event (line nil) and, once
// merged, the one that ends it: a handler's done, a destroy_begin's
// destroy.
type heldLine struct {
	line    []byte
	ev, end rdma.Event
	merged  bool
	at      time.Time
}

func (c *cmHeld) waiting() bool { return c.head < len(c.q) }

func (c *cmHeld) hold(e *rdma.Event, now time.Time) {
	c.q = append(c.q, heldLine{ev: *e, at: now})
}

func (c *cmHeld) queue(line []byte) { c.q = append(c.q, heldLine{line: line}) }

// done merges a cm_event_done into its handler's line, or a destroy into
// its destroy_begin's, if one is held: the same ID's same event, handed
// to its owner by the same task; the same object.
func (c *cmHeld) done(e *rdma.Event) bool {
	for i := len(c.q) - 1; i >= c.head; i-- {
		h := &c.q[i]
		if h.line == nil && !h.merged && ends(&h.ev, e) {
			h.merged, h.end = true, *e
			return true
		}
	}
	return false
}

// ends says whether d ends h: h's handler's done, or h's destroy.
func ends(h, d *rdma.Event) bool {
	if h.Kind == rdma.EvDestroyBegin {
		return d.Kind == rdma.EvDestroy && h.Type == d.Type && h.ID == d.ID && h.LQPN == d.LQPN &&
			h.DevName == d.DevName && h.Owner.TID == d.Owner.TID && h.Owner.KernName == d.Owner.KernName
	}
	return d.Kind == rdma.EvCMEventDone && h.CMEvent == d.CMEvent && h.ID == d.ID && h.Actor.TID == d.Actor.TID &&
		h.Owner.TID == d.Owner.TID && h.DevName == d.DevName && h.Src == d.Src && h.Dst == d.Dst
}

// ready takes the held lines that may be written, in order.
func (c *cmHeld) ready(now time.Time, force bool) []heldLine {
	if c.head > 0 && c.head >= len(c.q)/2 {
		// What was written last time goes: a queue that never empties
		// (a handler always waiting) stays as long as what it holds.
		n := copy(c.q, c.q[c.head:])
		clear(c.q[n:])
		c.q, c.head = c.q[:n], 0
	}
	from := c.head
	for c.head < len(c.q) {
		h := &c.q[c.head]
		if h.line == nil && !h.merged && !force && now.Sub(h.at) < cmHoldFor && len(c.q)-c.head < cmMaxHeld {
			break
		}
		c.head++
	}
	out := c.q[from:c.head]
	if c.head == len(c.q) {
		// Nothing held: the next hold starts at the front again (out
		// stays valid until then).
		c.q, c.head = c.q[:0], 0
	}
	return out
}

// appendStack adds where a user object was created (--stacks): "via", the
// library function its program called, and "stack", the frames from the
// call site outwards, each {"func","file","line","binary","offset","build-id"}
// with what is known.
func appendStack[O fieldAppender[O]](o O, s *rdma.CallStack) O {
	if s.Via != "" {
		o = o.str("via", s.Via)
	}
	b := []byte{'['}
	words := make([]string, len(s.Frames))
	for i, f := range s.Frames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if f.Func != "" {
			b = append(AppendJSONString(append(b, `"func":`...), f.Func), ',')
		}
		if f.File != "" {
			b = append(AppendJSONString(append(b, `"file":`...), f.File), ',')
		}
		if f.Line > 0 {
			b = append(strconv.AppendInt(append(b, `"line":`...), int64(f.Line), 10), ',')
		}
		b = AppendJSONString(append(b, `"binary":`...), f.Binary)
		b = strconv.AppendUint(append(b, `,"offset":`...), f.Offset, 10)
		if f.BuildID != "" {
			b = AppendJSONString(append(b, `,"build-id":`...), f.BuildID)
		}
		b = append(b, '}')
		words[i] = Sanitize(f.String())
	}
	b = append(b, ']')
	return o.field(Field{Key: "stack", Kind: Frames, Str: string(b), List: words})
}
