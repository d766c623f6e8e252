package formats

import (
	"bufio"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendJSON appends o as one compact JSON object. Strings are escaped so
// that no control character (C0, DEL or C1) survives raw: JSON output is
// terminal-safe as well as valid.
func AppendJSON(b []byte, o Object) []byte {
	b = append(b, '{')
	for i := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendJSONString(b, o[i].Key), ':')
		b = appendJSONValue(b, &o[i], "")
	}
	return append(b, '}')
}

// appendJSONIndented appends o as rdma -p -j writes an object (json.Indent
// with four spaces): a key a line, at indent and four spaces more.
func appendJSONIndented(b []byte, o Object, indent string) []byte {
	if len(o) == 0 {
		return append(b, "{}"...)
	}
	inner := indent + "    "
	b = append(b, '{')
	for i := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, '\n'), inner...)
		b = append(AppendJSONString(b, o[i].Key), ": "...)
		b = appendJSONValue(b, &o[i], inner)
	}
	return append(append(append(b, '\n'), indent...), '}')
}

// appendJSONValue appends f's value; a list one item a line below indent
// when indented ("" is compact).
func appendJSONValue(b []byte, f *Field, indent string) []byte {
	switch f.Kind {
	case Num:
		return strconv.AppendUint(b, f.Num, 10)
	case Hex:
		b = append(b, '"')
		b = strconv.AppendUint(b, f.Num, 16)
		return append(b, '"')
	case Bool:
		return strconv.AppendBool(b, f.Num != 0)
	case Int:
		return strconv.AppendInt(b, int64(f.Num), 10)
	case Secs, Micros:
		return appendSecs(b, f.Num)
	case Time:
		b = append(b, '"')
		return append(appendRFC3339NanoUTC(b, int64(f.Num)), '"')
	case Frames:
		return append(b, f.Str...)
	case StrList, NumList:
		b = append(b, '[')
		for j, s := range f.List {
			if j > 0 {
				b = append(b, ',')
			}
			if indent != "" {
				b = append(append(append(b, '\n'), indent...), "    "...)
			}
			if f.Kind == StrList {
				b = AppendJSONString(b, s)
			} else { // made from numbers by this package: written as they are
				b = append(b, s...)
			}
		}
		if indent != "" && len(f.List) > 0 {
			b = append(append(b, '\n'), indent...)
		}
		return append(b, ']')
	}
	return AppendJSONString(b, f.Str)
}

// AppendJSONString appends s as a JSON string literal.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// The run of bytes that need no escape, appended at once: most
		// strings are all one run (a trace line's keys and values).
		if j := safeRun(s, i); j > i {
			b = append(b, s[i:j]...)
			if i = j; i == len(s) {
				break
			}
		}
		c := s[i]
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\t':
			b = append(b, '\\', 't')
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			b = append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		case Unsafe(r):
			// Bidi and zero-width characters, and the line separators
			// that break JavaScript readers: escaped, the JSON means the
			// same and a terminal shows it as it is.
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				b = appendU4(appendU4(b, r1), r2)
			} else {
				b = appendU4(b, r)
			}
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// jsonSafe says which bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendU4 appends the JSON escape \uHHHH of one UTF-16 unit.
func appendU4(b []byte, u rune) []byte {
	return append(b, '\\', 'u', hexDigits[u>>12&0xf], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
}

// JSONArrayWriter writes objects as one JSON array, as `rdma -j` does
// (or `rdma -p -j`, indented, when Pretty).
type JSONArrayWriter struct {
	w   *bufio.Writer
	n   int
	buf []byte
	// Pretty indents the array as rdma -p -j does: an object a line at
	// four spaces, a key a line at eight.
	Pretty bool
}

// NewJSONArrayWriter starts an array on w.
func NewJSONArrayWriter(w io.Writer) *JSONArrayWriter {
	return &JSONArrayWriter{w: bufio.NewWriter(w)}
}

// Write adds one object.
func (j *JSONArrayWriter) Write(o Object) error {
	sep := byte(',')
	if j.n == 0 {
		sep = '['
	}
	j.n++
	j.buf = append(j.buf[:0], sep)
	if j.Pretty {
		j.buf = appendJSONIndented(append(j.buf, "\n    "...), o, "    ")
	} else {
		j.buf = AppendJSON(j.buf, o)
	}
	_, err := j.w.Write(j.buf)
	return err
}

// Close ends the array ("[]" when empty) and flushes.
func (j *JSONArrayWriter) Close() error {
	end := "]\n"
	switch {
	case j.n == 0:
		end = "[]\n"
	case j.Pretty:
		end = "\n]\n"
	}
	if _, err := j.w.WriteString(end); err != nil {
		return err
	}
	return j.w.Flush()
}

// NDJSONWriter writes one JSON object per line.
type NDJSONWriter struct {
	w   *bufio.Writer
	buf []byte
}

// NewNDJSONWriter writes to w; call Flush at the end.
func NewNDJSONWriter(w io.Writer) *NDJSONWriter { return &NDJSONWriter{w: bufio.NewWriter(w)} }

// Write adds one object and its newline.
func (n *NDJSONWriter) Write(o Object) error {
	n.buf = AppendJSON(n.buf[:0], o)
	n.buf = append(n.buf, '\n')
	_, err := n.w.Write(n.buf)
	return err
}

// Flush flushes buffered lines.
func (n *NDJSONWriter) Flush() error { return n.w.Flush() }
