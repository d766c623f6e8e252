// Package lineerr is the one error type of rdmatrace's input readers: a
// line of a named input that is not what the reader expected. Reading goes
// on after it; callers print it as one line on stderr.
package lineerr

import (
	"strconv"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/internal/termsafe"
)

// Error is a line of Source that yields nothing. Expected says what the
// reader wanted there; Found what it got, already quoted for a terminal
// (see Quote), or empty when there is nothing useful to show.
type Error struct {
	Source   string
	Line     int // 1-based
	Expected string
	Found    string
}

// Error reads "SOURCE:LINE: expected EXPECTED, found FOUND". The source is
// escaped: a file name can hold escape sequences too.
func (e *Error) Error() string {
	s := Printable(e.Source) + ":" + strconv.Itoa(e.Line) + ": expected " + e.Expected
	if e.Found != "" {
		s += ", found " + e.Found
	}
	return s
}

// Quote shows a piece of input in a message: quoted, escaped so that no
// control byte reaches a terminal, and cut to a readable length.
func Quote(b []byte) string {
	const max = 48
	if len(b) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return strconv.QuoteToASCII(string(b[:cut])) + "..."
	}
	return strconv.QuoteToASCII(string(b))
}

// Printable makes a source name safe for a terminal, escaped as every
// other output of rdmatrace is (termsafe.Sanitize).
func Printable(s string) string { return termsafe.Sanitize(s) }
