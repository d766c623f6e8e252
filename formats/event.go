package formats

import (
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
		if e.Inode != 0 {
			o = o.num("inode", e.Inode)
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
			b = strconv.AppendInt(append(word(b, col), "status "...), int64(e.Status), 10)
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
			b = strconv.AppendInt(append(b, " status "...), int64(e.Status), 10)
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
		b = strconv.AppendUint(append(word(b, col), "size "...), e.Size, 10)
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
// a long detail moves nothing after it.
//
//	14:03:07.123456 create            qp      rxe0/1     rping[812]               lqpn 17 RC RESET
func EventLine(e *rdma.Event) string { return string(AppendEventLine(make([]byte, 0, 128), e)) }

// EventText is the human line without its time and its columns' padding,
// for sinks that carry the time apart (an OTLP log record).
func EventText(e *rdma.Event) string {
	return strings.Join(strings.Fields(string(appendEventLine(make([]byte, 0, 128), e, StampNone, time.Time{}))), " ")
}

// AppendEventLine is EventLine appended to b, for the hot path: it
// allocates nothing but an address's text.
func AppendEventLine(b []byte, e *rdma.Event) []byte {
	return appendEventLine(b, e, StampAbsolute, time.Time{})
}

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
	colOwner = 24 // comm (15 bytes) and [tid] up to 7 digits
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

func appendEventLine(b []byte, e *rdma.Event, stamp Stamp, first time.Time) []byte {
	start := len(b)
	switch stamp {
	case StampAbsolute:
		b = append(e.Time.Local().AppendFormat(b, "15:04:05.000000"), ' ')
	case StampDate:
		b = append(e.Time.Local().AppendFormat(b, "2006-01-02 15:04:05.000000"), ' ')
	case StampRelative:
		// Right-aligned, as wide as the time of day up to 99999 s.
		var tmp [32]byte
		v := strconv.AppendFloat(tmp[:0], e.Time.Sub(first).Seconds(), 'f', 6, 64)
		for i := len(v); i < 15; i++ {
			b = append(b, ' ')
		}
		b = append(append(b, v...), ' ')
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
	switch {
	case e.Owner.KernName != "":
		b = append(append(append(b, '['), Sanitize(e.Owner.KernName)...), ']')
	case e.Has(rdma.EvHasOwner):
		b = appendTask(b, e.Owner.Comm, e.Owner.TID)
	default:
		b = append(b, '-')
	}
	b = padTo(b, col, colOwner)
	col = len(b)
	if e.Has(rdma.EvHasRes) && e.ID != 0 && e.Type != rdma.ResQP { // a QP's id is its lqpn
		b = strconv.AppendUint(append(word(b, col), "id "...), uint64(e.ID), 10)
	}
	if e.Given(rdma.HasLQPN) {
		b = strconv.AppendUint(append(word(b, col), "lqpn "...), uint64(e.LQPN), 10)
		b = append(word(b, col), e.QPType.String()...)
	}
	if e.Given(rdma.HasState) {
		b = word(b, col)
		if e.Has(rdma.EvHasPrevState) {
			b = append(append(b, e.StateName(true)...), "->"...)
		}
		b = append(b, e.StateName(false)...)
	}
	if e.Has(rdma.EvHasCM) {
		b = append(word(b, col), e.CMEvent.String()...)
	}
	if e.Has(rdma.EvHasCM) || e.Kind == rdma.EvCMQPCreate {
		if n := statusName(e); n != "" {
			b = append(word(b, col), statusText(e.Status, n)...)
		}
	}
	if f, ok := e.Failure(); ok && e.Kind == rdma.EvCMEventHandler {
		// A failed rdma_cm step in words, where its event is delivered.
		b = append(append(append(b, ": "...), Sanitize(f.Why)...), ';')
	}
	if e.Given(rdma.HasSrcAddr) && e.Src.IsValid() {
		b = strconv.AppendUint(append(e.Src.Addr().AppendTo(word(b, col)), ':'), uint64(e.Src.Port()), 10)
		if e.Dst.IsValid() && !e.Dst.Addr().IsUnspecified() {
			b = strconv.AppendUint(append(e.Dst.Addr().AppendTo(append(b, '>')), ':'), uint64(e.Dst.Port()), 10)
		}
	}
	b = appendSpan(b, col, e)
	if c := ContainerName(e.Owner.Place); c != "" && e.Has(rdma.EvHasOwner) && e.Owner.KernName == "" {
		b = append(append(word(b, col), "in container "...), c...)
	}
	if e.Actor.PID != 0 && e.Kind != rdma.EvOffCPU && (!e.Has(rdma.EvHasOwner) || e.Actor.TID != e.Owner.TID) {
		b = appendTask(append(word(b, col), "by "...), e.Actor.Comm, e.Actor.TID)
	}
	if c := e.Cleanup(); c != "" {
		b = append(append(append(word(b, col), '('), c...), " cleanup)"...)
	}
	if e.Given(rdma.HasNetdev) && e.Kind.IsDevice() {
		b = append(append(word(b, col), "netdev "...), Sanitize(e.Netdev)...)
	}
	if e.Has(rdma.EvPolled) {
		// Found by comparing two dumps, not seen happening.
		b = append(word(b, col), "(polled)"...)
	}
	return trimSpaces(b, start)
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
// (-j) or the human view. Lines are written into one buffer, written out
// when it holds eventFlushAt bytes or at Flush (trace flushes whenever
// the ring has been emptied): nothing is allocated per event but an
// address's text, nothing is copied twice, and a burst costs a write(2)
// per 64 KiB. This is the path tracer.BenchmarkBurstDecodeEnrichEncode
// measures.
type EventWriter struct {
	w    io.Writer
	json bool
	buf  []byte
	err  error // the first write's error, returned from then on (as bufio)
	// Stamp is how the human view times events; JSON always has "time".
	Stamp Stamp
	first time.Time // the first event's time, for StampRelative
}

// eventFlushAt is how much an EventWriter holds before it writes: a write
// per 4 KiB (bufio's default) was a quarter of the reader's CPU under a
// burst, in system calls (docs/benchmarks.md).
const eventFlushAt = 64 << 10

// NewEventWriter writes to w, NDJSON when json is set; call Flush at the end.
func NewEventWriter(w io.Writer, json bool) *EventWriter {
	return &EventWriter{w: w, json: json, buf: make([]byte, 0, eventFlushAt+4096)}
}

// Write writes one event and its newline.
func (ew *EventWriter) Write(e *rdma.Event) error {
	if ew.err != nil {
		return ew.err
	}
	if ew.json {
		ew.buf = AppendEventJSON(ew.buf, e)
	} else {
		if ew.first.IsZero() {
			ew.first = e.Time
			ew.buf = append(ew.buf, EventHeader(ew.Stamp)+"\n"...)
		}
		ew.buf = appendEventLine(ew.buf, e, ew.Stamp, ew.first)
	}
	ew.buf = append(ew.buf, '\n')
	if len(ew.buf) >= eventFlushAt {
		return ew.Flush()
	}
	return nil
}

// Flush writes out buffered events.
func (ew *EventWriter) Flush() error {
	if ew.err != nil || len(ew.buf) == 0 {
		return ew.err
	}
	_, ew.err = ew.w.Write(ew.buf)
	ew.buf = ew.buf[:0]
	return ew.err
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
