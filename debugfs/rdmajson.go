package debugfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Reading `rdma -j res show cm_id|qp` (iproute2 6.1): one JSON array of
// objects per command, on one line, or spread over lines with -p. The keys
// are those of the text form, plus "ifindex", "ifname" and "port" in place
// of "link". Inputs holding several arrays (outputs concatenated) are read
// one array after another.

// MaxJSONValue bounds one array element (or one token, such as a string):
// an `rdma -j` object is a few hundred bytes, a thousand with -d.
const MaxJSONValue = 256 << 10

var errJSONTooLarge = errors.New("JSON value too large")

type jsonReader struct {
	rd      *Reader
	cr      *countingReader
	dec     *json.Decoder
	inArray bool
	done    bool
	rec     Record
	raw     json.RawMessage
}

func newJSONReader(rd *Reader) *jsonReader {
	jr := &jsonReader{rd: rd}
	jr.cr = &countingReader{r: rd.lr, line: 1}
	jr.dec = json.NewDecoder(jr.cr)
	jr.cr.dec = jr.dec
	return jr
}

// countingReader feeds the decoder, notes where lines start so records
// get line numbers, and stops a value from growing the decoder's buffer
// past MaxJSONValue.
type countingReader struct {
	r    io.Reader
	dec  *json.Decoder
	n    int64   // bytes read
	nl   []int64 // offsets of newlines not yet counted
	line int     // line of the last offset asked for
	err  error   // a read error other than the end of input
}

func (c *countingReader) Read(p []byte) (int, error) {
	// The decoder grows its buffer to hold the value it is scanning;
	// reading no further than MaxJSONValue past what it has consumed
	// keeps that buffer small.
	room := MaxJSONValue - (c.n - c.dec.InputOffset())
	if room <= 0 {
		return 0, errJSONTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.n+int64(i))
		}
	}
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// lineAt is the line of byte offset off; offsets must not go backwards.
func (c *countingReader) lineAt(off int64) int {
	i := 0
	for i < len(c.nl) && c.nl[i] < off {
		i++
	}
	c.line += i
	c.nl = append(c.nl[:0], c.nl[i:]...)
	return c.line
}

func (jr *jsonReader) next() (*Record, error) {
	for !jr.done {
		if !jr.inArray {
			tok, err := jr.dec.Token()
			if err != nil {
				return nil, jr.fail(err)
			}
			switch tok {
			case json.Delim('['):
				jr.inArray = true
				continue
			case json.Delim('{'):
				return nil, jr.fail(fmt.Errorf("an object outside an array"))
			}
			return nil, jr.fail(fmt.Errorf("unexpected %v", tok))
		}
		if !jr.dec.More() {
			if _, err := jr.dec.Token(); err != nil { // the ']'
				return nil, jr.fail(err)
			}
			jr.inArray = false
			continue
		}
		jr.raw = jr.raw[:0]
		if err := jr.dec.Decode(&jr.raw); err != nil {
			return nil, jr.fail(err)
		}
		end := jr.dec.InputOffset()
		line := jr.cr.lineAt(end - int64(len(jr.raw)))
		rec, lerr := jr.object(jr.raw)
		if lerr != nil {
			lerr.Source, lerr.Line = jr.rd.source, line
			return nil, lerr
		}
		rec.Source, rec.Line, rec.Origin = jr.rd.source, line, ""
		return rec, nil
	}
	return nil, io.EOF
}

// fail ends the input: after a JSON syntax error there is no telling where
// the next object starts. The end of input is not a failure.
func (jr *jsonReader) fail(err error) error {
	jr.done = true
	if err == io.EOF && !jr.inArray {
		return io.EOF
	}
	line := jr.cr.lineAt(jr.dec.InputOffset())
	lerr := &lineerr.Error{Source: jr.rd.source, Line: line, Expected: "`rdma -j res show` JSON (an array of objects)"}
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, errJSONTooLarge):
		lerr.Expected = "a JSON value of at most " + strconv.Itoa(MaxJSONValue) + " bytes"
		lerr.Found = "a longer one; the rest of the input is not read"
	case errors.As(err, &syn):
		lerr.Line = jr.cr.lineAt(syn.Offset)
		// encoding/json quotes the bad byte as a rune (U+0080-U+00FF
		// stay raw): ASCII-escape it, as every error of this package is.
		msg := strconv.QuoteToASCII(syn.Error())
		lerr.Found = "invalid JSON (" + msg[1:len(msg)-1] + "); the rest of the input is not read"
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		lerr.Found = "the end of the input inside the array (truncated?)"
	default:
		var le *lineerr.Error
		if errors.As(err, &le) {
			return le
		}
		if jr.cr.err != nil {
			return readError(jr.rd.source, jr.cr.err)
		}
		lerr.Found = lineerr.Quote([]byte(err.Error())) + "; the rest of the input is not read"
	}
	return lerr
}

// object reads one array element.
func (jr *jsonReader) object(raw []byte) (*Record, *lineerr.Error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, &lineerr.Error{Expected: "a JSON object", Found: lineerr.Quote(raw)}
	}
	var fields []jsonField
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token() // '{', checked above
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, &lineerr.Error{Expected: "a JSON object", Found: lineerr.Quote(raw)}
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &lineerr.Error{Expected: "a JSON object", Found: lineerr.Quote(raw)}
		}
		if string(v) == "null" {
			continue // JSON null is an absent value, not a process named "null"
		}
		fields = append(fields, jsonField{k, scalarText(v)})
	}
	rec := &jr.rec
	r := &rec.Res
	*r = rdma.Resource{Type: rdma.ResCMID}
	keys := cmIDKeys
	switch {
	case hasField(fields, rdma.KeySQPSN.Name):
		keys, r.Type = qpKeys, rdma.ResQP
	case !hasField(fields, rdma.KeyPS.Name):
		const expected = "a cm_id object (with \"ps\") or a qp object (with \"sq-psn\")"
		keys := make([]string, len(fields))
		for i, f := range fields {
			keys[i] = f.key
			if t, ok := idKeyTypes[f.key]; ok && i == 2 {
				return nil, &lineerr.Error{Expected: expected, Found: "an `rdma -j res show " + t + "` object"}
			}
		}
		if hasField(fields, "cm_id") && hasField(fields, "qp") {
			return nil, &lineerr.Error{Expected: expected, Found: "an `rdma -j res show` summary object"}
		}
		return nil, &lineerr.Error{Expected: expected, Found: "an object with keys " + lineerr.Quote([]byte(strings.Join(keys, ",")))}
	}
	rd := jr.rd
	for _, f := range fields {
		v := []byte(f.value)
		switch f.key {
		case rdma.KeyIfindex.Name:
			n, ok := parseUint(v, 0xffffffff)
			if !ok {
				return nil, &lineerr.Error{Expected: "ifindex (a number)", Found: lineerr.Quote(v)}
			}
			r.DevIndex = uint32(n)
		case rdma.KeyIfname.Name:
			r.DevName = rd.intern(v)
		case rdma.KeyPort.Name:
			n, ok := parseUint(v, 0xffffffff)
			if !ok {
				return nil, &lineerr.Error{Expected: "port (a number)", Found: lineerr.Quote(v)}
			}
			r.Port, r.Has = uint32(n), r.Has|rdma.HasPort
		case rdma.KeyComm.Name:
			r.Owner.Comm = rd.intern(v)
		default:
			if err := rd.setTextValue(r, keys[f.key], []byte(f.key), v); err != "" {
				return nil, &lineerr.Error{Expected: f.key + " " + err, Found: lineerr.Quote(v)}
			}
		}
	}
	if r.Type == rdma.ResQP && r.Has&rdma.HasLQPN == 0 {
		return nil, &lineerr.Error{Expected: "lqpn in a qp object", Found: lineerr.Quote(raw)}
	}
	// In JSON, iproute2 writes a kernel owner's name without brackets:
	// a name without a pid is a kernel module.
	if r.Has&rdma.HasPID == 0 && r.Owner.Comm != "" {
		r.Owner.KernName, r.Owner.Comm = r.Owner.Comm, ""
	}
	rec.Kind, rec.Layout = KindRdmaJSON, nil
	return rec, nil
}

type jsonField struct{ key, value string }

func hasField(fs []jsonField, k string) bool {
	for _, f := range fs {
		if f.key == k {
			return true
		}
	}
	return false
}

// scalarText gives a string's text, a number's digits, and any other
// value as its compact JSON.
func scalarText(v json.RawMessage) string {
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}
