package debugfs

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// parseLine turns one line into a record, nothing (blank lines, headers,
// separators) or an error.
func (rd *Reader) parseLine(line []byte) (*Record, *lineerr.Error) {
	body := line
	if path, ok := headTailSeparator(line); ok {
		rd.origin = rd.intern(path)
		return nil, nil
	}
	if path, rest, ok := grepPrefix(line); ok {
		rd.origin = rd.intern(path)
		body = rest
	}
	if n := rd.split(body); n > maxCells {
		return nil, &lineerr.Error{Expected: "a line of at most " + strconv.Itoa(maxColumns) + " cells",
			Found: strconv.Itoa(n) + " cells"}
	}
	cells := rd.cells
	if len(cells) == 0 {
		return nil, nil
	}
	if isHeader(cells) {
		return nil, rd.setHeader(cells)
	}
	if string(cells[0]) == "link" && len(cells) > 1 && bytes.IndexByte(cells[1], '/') > 0 {
		return rd.parseText(cells)
	}
	if lerr := otherRdmaLine(cells); lerr != nil {
		return nil, lerr
	}
	rec := &rd.rec
	if lerr := rd.parseLegacyRow(rec, rd.layout, body, cells); lerr != nil {
		return nil, lerr
	}
	rd.stamp(rec)
	return rec, nil
}

// stamp sets where the record came from.
func (rd *Reader) stamp(rec *Record) {
	rec.Source, rec.Line, rec.Origin = rd.source, rd.line, rd.origin
}

// setHeader switches to the columns of a header line. A header that
// cannot be used is an error, and the columns in force stay.
func (rd *Reader) setHeader(cells [][]byte) *lineerr.Error {
	if rd.layout.equalNames(cells) {
		return nil // the repeated header of concatenated files
	}
	for _, l := range rd.layouts {
		if l.equalNames(cells) {
			rd.layout = l // device files of one dump alternate among few headers
			return nil
		}
	}
	names := make([]string, len(cells))
	for i, c := range cells {
		names[i] = string(c)
	}
	l, err := NewLayout(names)
	if err != nil {
		le := err.(*layoutError)
		return &lineerr.Error{Expected: le.expected, Found: le.found + " in header " + lineerr.Quote([]byte(headerNames(cells)))}
	}
	rd.layout = l
	if len(rd.layouts) < maxLayouts {
		rd.layouts = append(rd.layouts, l)
	}
	return nil
}

// maxLayouts bounds the headers a reader remembers for reuse.
const maxLayouts = 16

// otherRdmaLine recognises `rdma` output this reader does not turn into
// records, so the error says what the line is.
func otherRdmaLine(cells [][]byte) *lineerr.Error {
	switch {
	case string(cells[0]) == "dev" && len(cells) > 2:
		// cq, mr, pd, ctx, srq lines: "dev rxe0 cqn 1 ..."
		what := "another resource"
		if t, ok := idKeyTypes[string(cells[2])]; ok {
			what = t
		}
		return &lineerr.Error{Expected: "a cm_id or qp line (rdmatrace parse reads those)",
			Found: "an `rdma res show " + what + "` line"}
	case len(cells) > 2 && bytes.HasSuffix(cells[0], []byte(":")) && bytes.HasSuffix(cells[1], []byte(":")):
		if _, ok := parseUint(cells[0][:len(cells[0])-1], 0xffffffff); ok {
			return &lineerr.Error{Expected: "a cm_id or qp line (rdmatrace parse reads those)",
				Found: "an `rdma res show` summary line for " + lineerr.Quote(cells[1][:len(cells[1])-1])}
		}
	}
	return nil
}

// idKeyTypes names the resource of a "dev DEV KEY ..." line by its first key.
var idKeyTypes = map[string]string{rdma.KeyCQN.Name: "cq", rdma.KeyMRN.Name: "mr", rdma.KeyPDN.Name: "pd",
	rdma.KeyCTXN.Name: "ctx", rdma.KeySRQN.Name: "srq"}

// headTailSeparator recognises "==> path <==", which head and tail write
// between files.
func headTailSeparator(line []byte) (path []byte, ok bool) {
	t := bytes.TrimRight(line, " \t")
	if len(t) < 9 || !bytes.HasPrefix(t, []byte("==> ")) || !bytes.HasSuffix(t, []byte(" <==")) {
		return nil, false
	}
	return t[4 : len(t)-4], true
}

// grepPrefix recognises the "path:" that grep -H and grep -r put before
// each line (and the "N:" of grep -n after it). A legacy line never has a
// ':' before its first blank: TYPE and DEVICE hold none, and addresses come
// later. A prefix made only of digits is not a path: it is the "0:" of an
// `rdma res show` summary line.
func grepPrefix(line []byte) (path, rest []byte, ok bool) {
	i := bytes.IndexAny(line, ": \t")
	if i <= 0 || line[i] != ':' {
		return nil, nil, false
	}
	path, rest = line[:i], line[i+1:]
	if _, num := parseUint(path, 1<<63); num {
		return nil, nil, false
	}
	if j := bytes.IndexByte(rest, ':'); j > 0 {
		if _, num := parseUint(rest[:j], 1<<63); num {
			rest = rest[j+1:] // grep -n
		}
	}
	return path, rest, true
}

// split cuts body into cells at spaces and tabs, decoding escapes, and
// returns how many cells there were (only the first maxCells are kept).
func (rd *Reader) split(body []byte) int {
	rd.cells, rd.spans, rd.dec = rd.cells[:0], rd.spans[:0], rd.dec[:0]
	n := 0
	for i := 0; i < len(body); {
		for i < len(body) && (body[i] == ' ' || body[i] == '\t') {
			i++
		}
		if i == len(body) {
			break
		}
		start := i
		for i < len(body) && body[i] != ' ' && body[i] != '\t' {
			i++
		}
		n++
		if n > maxCells {
			continue
		}
		rd.spans = append(rd.spans, span{start, i})
		rd.cells = append(rd.cells, rd.decode(body[start:i], false))
	}
	return n
}

// decode undoes the escapes LegacyWriter (and termsafe.Sanitize)
// write: \\, \xHH, \uHHHH and \UHHHHHHHH. A backslash that starts no
// such escape is kept. Cells without a backslash are returned as they are.
func (rd *Reader) decode(cell []byte, always bool) []byte {
	if bytes.IndexByte(cell, '\\') < 0 {
		if !always {
			return cell
		}
		start := len(rd.dec)
		rd.dec = append(rd.dec, cell...)
		return rd.dec[start:len(rd.dec):len(rd.dec)]
	}
	start := len(rd.dec)
	for i := 0; i < len(cell); i++ {
		c := cell[i]
		if c != '\\' || i+1 == len(cell) {
			rd.dec = append(rd.dec, c)
			continue
		}
		switch next := cell[i+1]; {
		case next == '\\':
			rd.dec = append(rd.dec, '\\')
			i++
		case next == 'x' && i+3 < len(cell) && isHex(cell[i+2]) && isHex(cell[i+3]):
			rd.dec = append(rd.dec, unhex(cell[i+2])<<4|unhex(cell[i+3]))
			i += 3
		case next == 'u' && allHex(cell, i+2, 4):
			rd.dec = utf8.AppendRune(rd.dec, hexRune(cell[i+2:i+6]))
			i += 5
		case next == 'U' && allHex(cell, i+2, 8):
			rd.dec = utf8.AppendRune(rd.dec, hexRune(cell[i+2:i+10]))
			i += 9
		default:
			rd.dec = append(rd.dec, c)
		}
	}
	return rd.dec[start:len(rd.dec):len(rd.dec)]
}

// allHex reports whether cell holds n hex digits from i on.
func allHex(cell []byte, i, n int) bool {
	if i+n > len(cell) {
		return false
	}
	for _, c := range cell[i : i+n] {
		if !isHex(c) {
			return false
		}
	}
	return true
}

// hexRune is the code point the hex digits h spell; one past Unicode is
// invalid, and utf8.AppendRune writes U+FFFD for it.
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		r = r<<4 | rune(unhex(c))
		if r > utf8.MaxRune {
			return utf8.RuneError
		}
	}
	return r
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// maxInterned bounds the name cache: dumps repeat a few device, net device
// and process names on every line, and sharing them saves an allocation
// per cell.
const maxInterned = 4096

func (rd *Reader) intern(b []byte) string {
	if s, ok := rd.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(rd.names) < maxInterned && len(b) <= 64 {
		rd.names[s] = s
	}
	return s
}
