package debugfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
)

// maxCells bounds the cells of a line; a row has at most maxColumns.
const maxCells = maxColumns + 1

// Reader reads records from one input: the legacy layout in every wrapping
// FORMAT.md lists, `rdma res show` text, or `rdma -j res show` JSON,
// chosen by the input's first bytes.
type Reader struct {
	source string
	lr     *lines.Reader
	kind   inputKind
	json   *jsonReader

	line  int   // of the last line read, or of the JSON value
	done  error // io.EOF or the read error that ended the input
	limit lineerr.Limit
	ended error // what ended the input, told after the bad lines not shown

	// Outputs of the last line read, returned one by one.
	queue  [2]output
	qi, qn int

	rec     Record    // the latest legacy record
	text    [2]Record // rdma text records: one pending, one being parsed
	pending *Record   // an rdma text record that may go on on the next line

	layout  *Layout
	layouts []*Layout // headers seen, to share their layouts
	origin  string
	m       matcher
	cells   [][]byte
	spans   []span
	dec     []byte // decoded cells live here
	names   map[string]string
}

type output struct {
	rec *Record
	err error
}

type span struct{ start, end int }

type inputKind uint8

const (
	kindUnknown inputKind = iota
	kindLines
	kindJSON
)

// NewReader reads from r, naming it source in records and errors.
func NewReader(r io.Reader, source string) *Reader {
	return &Reader{
		source: source,
		lr:     lines.NewReader(r, source),
		layout: DefaultLayout,
		cells:  make([][]byte, 0, maxCells),
		spans:  make([]span, 0, maxCells),
		names:  make(map[string]string),
		limit:  lineerr.Limit{What: "a line of RDMA state (a legacy rdma_cm dump, `rdma res show` text or JSON)"},
	}
}

// Source is the input's name.
func (rd *Reader) Source() string { return rd.source }

// Next returns the next record, or a *lineerr.Error for a line that yields
// none (read on after it), or io.EOF at the end, or another error when the
// input cannot be read further. The record is reused by later calls: copy
// what you keep. Of an input's bad lines, the first lineerr.Shown are
// returned each and the rest counted in one error at the end; after
// lineerr.GiveUp in a row the input is read no further.
func (rd *Reader) Next() (*Record, error) {
	for rd.ended == nil {
		if rd.limit.GaveUp() {
			rd.ended = io.EOF
			break
		}
		rec, err := rd.next()
		if err == nil {
			rd.limit.Good()
			return rec, nil
		}
		var le *lineerr.Error
		if errors.As(err, &le) {
			if e := rd.limit.Bad(le); e != nil {
				return nil, e
			}
			continue
		}
		rd.ended = err
	}
	if e := rd.limit.End(); e != nil {
		return nil, e
	}
	return nil, rd.ended
}

func (rd *Reader) next() (*Record, error) {
	if rd.kind == kindUnknown {
		if b, _ := rd.lr.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
			rd.lr.Discard(len(utf8BOM)) // a BOM is not content: JSON after it is still JSON
		}
		rd.kind = rd.sniff()
		if rd.kind == kindJSON {
			rd.json = newJSONReader(rd)
		}
	}
	if rd.kind == kindJSON {
		return rd.json.next()
	}
	for rd.qi == rd.qn {
		if rd.done != nil {
			return nil, rd.done
		}
		rd.qi, rd.qn = 0, 0
		rd.step()
	}
	o := rd.queue[rd.qi]
	rd.qi++
	return o.rec, o.err
}

func (rd *Reader) push(rec *Record, err error) {
	rd.queue[rd.qn] = output{rec, err}
	rd.qn++
}

// flushPending queues the held rdma text record, if any.
func (rd *Reader) flushPending() {
	if rd.pending != nil {
		rd.push(rd.pending, nil)
		rd.pending = nil
	}
}

// step reads one line and queues what it yields.
func (rd *Reader) step() {
	line, err := rd.lr.Next()
	rd.line = rd.lr.Line()
	if err != nil {
		// Checked only on an error: errors.As makes its target escape,
		// and an allocation per line would make memory grow with the dump.
		rd.flushPending()
		var long *lineerr.Error
		switch {
		case errors.As(err, &long):
			rd.push(nil, long)
		case err == io.EOF:
			rd.done = err
		default:
			rd.done = readError(rd.source, err)
		}
		return
	}
	if blank(line) {
		// Nothing, as parseLine would say; a run of them costs a byte
		// scan.
		rd.lr.SkipBlank()
		return
	}
	if rd.pending != nil && len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		// `rdma -p -d` puts driver attributes on indented lines after
		// their record.
		if lerr := rd.continueText(rd.pending, line); lerr == nil {
			return
		}
	}
	rec, lerr := rd.parseLine(line)
	if lerr != nil {
		lerr.Source, lerr.Line = rd.source, rd.line
		if rd.lr.Unterminated() {
			lerr.Found += " (the last line has no line end: the input may be truncated)"
		}
		rd.flushPending()
		rd.push(nil, lerr)
		return
	}
	if rec == nil {
		return
	}
	rd.flushPending()
	if rec.Kind == KindRdmaText {
		rd.pending = rec // complete once the next line is not a continuation
		return
	}
	rd.push(rec, nil)
}

// blank reports whether a line holds nothing but spaces, tabs and CRs.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// sniff decides between JSON and lines from the first non-blank byte.
func (rd *Reader) sniff() inputKind {
	for n := 1; n <= 4096; n++ {
		b, _ := rd.lr.Peek(n)
		if len(b) < n {
			return kindLines
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '[', '{':
			return kindJSON
		}
		return kindLines
	}
	return kindLines
}

// readError names the input in a read error, unless the error names it
// already: an os error reads "read PATH: ...", and wrapping it again gave
// "read PATH: read PATH: ...". The name is as it is: the caller escapes
// what it prints, once.
func readError(source string, err error) error {
	var pe *fs.PathError
	var se *SkipError
	if errors.As(err, &pe) || errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("read %s: %w", source, err)
}
