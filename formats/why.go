package formats

import (
	"bufio"
	"io"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/analysis/why"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// WhyObject lays out a line of `rdmatrace why -j`: time, what failed and
// how badly, the object (trace -j's keys: res, ifname, port, id or lqpn,
// state), its owner (pid, comm, place), the peer and the sentence.
func WhyObject(o Object, l why.Line) Object {
	e := &l.Res
	o = append(o, timeField("time", l.Time))
	o = o.str("what", l.What).str("severity", l.Severity.String())
	if e.Has(rdma.EvHasRes) || e.Type == rdma.ResCMID {
		o = o.str("res", e.Type.String())
	}
	if e.Has(rdma.EvHasDev) {
		o = o.keyAlways(&e.Resource, &rdma.KeyIfname)
		if e.Given(rdma.HasPort) {
			o = o.keyAlways(&e.Resource, &rdma.KeyPort)
		}
	}
	switch {
	case e.Given(rdma.HasLQPN):
		o = o.keyAlways(&e.Resource, &rdma.KeyLQPN)
	case e.Has(rdma.EvHasRes) && e.ID != 0:
		o = o.num("id", uint64(e.ID))
	}
	if e.Given(rdma.HasState) {
		o = o.str(rdma.KeyState.Name, e.StateName(false))
	}
	switch {
	case e.Has(rdma.EvHasOwner):
		o = o.num(rdma.KeyPID.Name, uint64(e.Owner.TID))
		if e.Owner.PID != e.Owner.TID {
			o = o.num("tgid", uint64(e.Owner.PID))
		}
		o = o.str(rdma.KeyComm.Name, e.Owner.Comm).place(e.Owner.Place)
	case e.Owner.KernName != "":
		o = o.str(rdma.KeyComm.Name, e.Owner.KernName)
	}
	if l.Peer != "" {
		o = o.str("peer", l.Peer)
	}
	return o.str("why", l.Why)
}

// WhyWriter is the human view of `rdmatrace why`: one line a failure,
// time, object, owner, peer and the sentence, in columns.
//
//	07:31:02.120511 cm_id rxe0/1        rping[212]           10.0.0.7:7471         REJECTED: no listener on port 7471 at 10.0.0.7 ...
type WhyWriter struct {
	w      *bufio.Writer
	buf    []byte
	header bool
}

// NewWhyWriter writes to w; call Close at the end.
func NewWhyWriter(w io.Writer) *WhyWriter { return &WhyWriter{w: bufio.NewWriter(w)} }

const (
	colWhyObject = 20
	colWhyOwner  = 24
	colWhyPeer   = 21 // [v4]:port, or an IPv6 address's start
)

// WhyHeader names the human view's columns.
func WhyHeader() string {
	b := padTo(append([]byte(nil), "TIME"...), 0, 15)
	col := len(b)
	b = padTo(append(b, "OBJECT"...), col, colWhyObject)
	col = len(b)
	b = padTo(append(b, "OWNER"...), col, colWhyOwner)
	col = len(b)
	b = padTo(append(b, "PEER"...), col, colWhyPeer)
	return string(append(b, "WHAT WENT WRONG"...))
}

func appendWhyLine(b []byte, l why.Line) []byte {
	e := &l.Res
	start := len(b)
	b = append(l.Time.Local().AppendFormat(b, "15:04:05.000000"), ' ')
	col := len(b)
	b = append(b, e.Type.String()...)
	switch {
	case e.Type == rdma.ResQP && e.Given(rdma.HasLQPN): // a QP by its number
		b = strconv.AppendUint(append(b, ' '), uint64(e.LQPN), 10)
	case e.Has(rdma.EvHasRes) && e.ID != 0:
		b = strconv.AppendUint(append(b, ' '), uint64(e.ID), 10)
	}
	if e.Has(rdma.EvHasDev) && e.DevName != "" {
		b = append(append(b, ' '), Sanitize(e.DevName)...)
		if e.Given(rdma.HasPort) && e.Port != 0 {
			b = strconv.AppendUint(append(b, '/'), uint64(e.Port), 10)
		}
	}
	b = padTo(b, col, colWhyObject)
	col = len(b)
	switch {
	case e.Owner.KernName != "":
		b = append(append(append(b, '['), Sanitize(e.Owner.KernName)...), ']')
	case e.Has(rdma.EvHasOwner):
		b = appendTask(b, e.Owner.Comm, e.Owner.PID)
		if c := ContainerName(e.Owner.Place); c != "" {
			b = append(append(b, " in "...), c...)
		}
	default:
		b = append(b, '-')
	}
	b = padTo(b, col, colWhyOwner)
	col = len(b)
	if l.Peer != "" {
		b = append(b, l.Peer...)
	} else {
		b = append(b, '-')
	}
	b = padTo(b, col, colWhyPeer)
	b = append(append(append(b, l.What...), ": "...), Sanitize(l.Why)...)
	return trimSpaces(b, start)
}

// Write writes one failure.
func (w *WhyWriter) Write(l why.Line) error {
	if !w.header {
		w.header = true
		w.w.WriteString(WhyHeader() + "\n")
	}
	w.buf = append(appendWhyLine(w.buf[:0], l), '\n')
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes out what is buffered.
func (w *WhyWriter) Flush() error { return w.w.Flush() }

// Close ends the view: with no failure at all, it says so.
func (w *WhyWriter) Close() error {
	if !w.header {
		w.w.WriteString("nothing went wrong\n")
	}
	return w.w.Flush()
}

// NewWhySink is `rdmatrace why`'s writer in format f: the human view,
// NDJSON or a JSON array.
func NewWhySink(w io.Writer, f Format) Sink[why.Line] {
	if f == FormatJSON || f == FormatNDJSON {
		return NewObjectSink(w, f, false, WhyObject)
	}
	return NewWhyWriter(w)
}
