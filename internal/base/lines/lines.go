// Package lines reads text inputs line by line with a bound on a line's
// length, so that memory stays bounded whatever the input. A longer line is
// skipped and reported as a *lineerr.Error naming the source and line;
// reading goes on after it.
package lines

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
)

// Max is the longest line read: legacy rows are about 100 bytes, `rdma res
// show -d` lines and trace -j events a few hundred, kernel log lines less
// than a kilobyte.
const Max = 64 << 10

// Reader reads lines of one input.
type Reader struct {
	br           *bufio.Reader
	source       string
	line         int
	unterminated bool
}

// NewReader reads r, called source in errors.
func NewReader(r io.Reader, source string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, Max), source: source}
}

// Source is the input's name.
func (r *Reader) Source() string { return r.source }

// Line is the 1-based number of the line last returned (or skipped).
func (r *Reader) Line() int { return r.line }

// Unterminated reports whether the line last returned had no line end: the
// last line of an input that may have been cut short.
func (r *Reader) Unterminated() bool { return r.unterminated }

// Next returns the next line without its line end (LF or CRLF), valid until
// the next call. At the end it returns io.EOF; for a line longer than Max a
// *lineerr.Error (call Next again to go on); a read error as it came.
func (r *Reader) Next() ([]byte, error) {
	r.unterminated = false
	b, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.line++
		n := len(b)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = r.br.ReadSlice('\n')
			n += len(b)
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, &lineerr.Error{Source: r.source, Line: r.line,
			Expected: "a line of at most " + strconv.Itoa(Max) + " bytes",
			Found:    "a line of " + strconv.Itoa(n) + " bytes"}
	}
	if err == io.EOF {
		if len(b) == 0 {
			return nil, io.EOF
		}
		r.unterminated = true
	} else if err != nil {
		return nil, err
	}
	r.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'}), nil
}

// SkipBlank passes over the blank lines (nothing but spaces, tabs and
// CRs) that follow, counting them: a run of them, which is what a
// decompressed bomb of newlines is, costs a byte scan, not a Next each.
// A reader for which a blank line means something calls it after the
// first of a run. A blank last line without its line end is left to Next.
func (r *Reader) SkipBlank() {
	from := 0 // bytes of a blank line without its end yet, scanned already
	for {
		n := r.br.Buffered()
		if n == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return
			}
			n = r.br.Buffered()
		}
		buf, _ := r.br.Peek(n)
		end := 0 // past the line end of the last blank line seen
		for i := from; i < len(buf); i++ {
			// Eight empty lines at a time: what a bomb of newlines is.
			for i+8 <= len(buf) && binary.LittleEndian.Uint64(buf[i:]) == newlines {
				r.line += 8
				i += 8
				end = i
			}
			if i == len(buf) {
				break
			}
			switch buf[i] {
			case '\n':
				r.line++
				end = i + 1
			case ' ', '\t', '\r':
			default:
				r.br.Discard(end)
				return
			}
		}
		r.br.Discard(end)
		from = n - end
		if end == 0 {
			// Blanks without a line end yet: more input says whether
			// the line is blank. A buffer full of them is a line too
			// long, which Next tells.
			if n >= Max {
				return
			}
			if _, err := r.br.Peek(n + 1); err != nil {
				return
			}
		}
	}
}

const newlines = 0x0a0a0a0a0a0a0a0a

// Peek, Discard and Read give the input itself, past what Next has read:
// for readers that decide the format from the first bytes, or hand the
// rest to a decoder of another shape (JSON).
func (r *Reader) Peek(n int) ([]byte, error) { return r.br.Peek(n) }

// Discard skips n bytes, as bufio.Reader.Discard.
func (r *Reader) Discard(n int) (int, error) { return r.br.Discard(n) }

// Read reads the input, as bufio.Reader.Read.
func (r *Reader) Read(p []byte) (int, error) { return r.br.Read(p) }
