package formats

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Format is an output format, as -o names it.
type Format string

// The output formats. Each command takes some of them (ParseFormat's
// valid list): a snapshot table, iproute2's text, a JSON array, NDJSON,
// the legacy rdma_cm layout.
const (
	FormatTable  Format = "table"
	FormatText   Format = "text"
	FormatJSON   Format = "json"
	FormatNDJSON Format = "ndjson"
	FormatLegacy Format = "legacy"
)

// ParseFormat is the one -o parser. name must be one of valid (the
// command's formats, the first its default); -j (jsonFlag) is JSON, the
// array, for a snapshot, and NDJSON for a stream, whose jsonIs says so.
// "-o json" is an array everywhere.
func ParseFormat(name string, jsonFlag bool, jsonIs Format, valid ...Format) (Format, error) {
	if !slices.Contains(valid, Format(name)) {
		names := make([]string, len(valid))
		for i, v := range valid {
			names[i] = string(v)
		}
		return "", fmt.Errorf("unknown output format %q: valid formats are %s", name, strings.Join(names, ", "))
	}
	if jsonFlag {
		return jsonIs, nil
	}
	return Format(name), nil
}

// Sink is where a command's records go, in the one format it chose:
// one writer per format (ptcpdump's internal/writer). Flush writes out
// what is buffered (a stream's moment to show what it has); Close ends
// the output (a JSON array's "]") and flushes.
type Sink[R any] interface {
	Write(R) error
	Flush() error
	Close() error
}

// ObjectFunc lays a record out as an Object, appending to o (reused).
type ObjectFunc[R any] func(o Object, r R) Object

// NewObjectSink is the JSON or NDJSON writer of records laid out by obj;
// pretty indents a JSON array as rdma -p -j does.
func NewObjectSink[R any](w io.Writer, f Format, pretty bool, obj ObjectFunc[R]) Sink[R] {
	if f == FormatNDJSON {
		return &ndjsonSink[R]{w: NewNDJSONWriter(w), obj: obj}
	}
	s := &jsonSink[R]{w: NewJSONArrayWriter(w), obj: obj}
	s.w.Pretty = pretty
	return s
}

// jsonSink writes records as one JSON array.
type jsonSink[R any] struct {
	w   *JSONArrayWriter
	obj ObjectFunc[R]
	o   Object
}

func (s *jsonSink[R]) Write(r R) error {
	s.o = s.obj(s.o[:0], r)
	return s.w.Write(s.o)
}

// Flush writes out the objects so far.
func (s *jsonSink[R]) Flush() error { return s.w.w.Flush() }

func (s *jsonSink[R]) Close() error { return s.w.Close() }

// ndjsonSink writes one JSON object a line.
type ndjsonSink[R any] struct {
	w   *NDJSONWriter
	obj ObjectFunc[R]
	o   Object
}

func (s *ndjsonSink[R]) Write(r R) error {
	s.o = s.obj(s.o[:0], r)
	return s.w.Write(s.o)
}
func (s *ndjsonSink[R]) Flush() error { return s.w.Flush() }
func (s *ndjsonSink[R]) Close() error { return s.w.Flush() }

// Objects is the ObjectFunc of records that are Objects already.
func Objects(_ Object, o Object) Object { return o }

// NewEventSink is the writer of traced events in format f: the human
// view (Text, as v says), NDJSON (a recording's lines) or a JSON array.
func NewEventSink(w io.Writer, f Format, v EventView) Sink[*rdma.Event] {
	switch f {
	case FormatJSON:
		return NewObjectSink(w, FormatJSON, false, AppendEventObject)
	case FormatNDJSON:
		return NewEventWriter(w, true)
	}
	ew := NewEventWriter(w, false)
	ew.View = v
	return ew
}

// Close ends the NDJSON stream: it flushes.
func (n *NDJSONWriter) Close() error { return n.Flush() }

var (
	_ Sink[*rdma.Event] = (*EventWriter)(nil)
	_ Sink[Object]      = (*NDJSONWriter)(nil)
	_ Sink[Object]      = (*JSONArrayWriter)(nil)
)

// Flush writes out the objects so far.
func (j *JSONArrayWriter) Flush() error { return j.w.Flush() }
