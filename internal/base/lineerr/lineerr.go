// Package lineerr is the one error type of rdmatrace's input readers: a
// line of a named input that is not what the reader expected. Reading goes
// on after it; callers print it as one line on stderr.
package lineerr

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// Error is a line of Source that yields nothing. Expected says what the
// reader wanted there; Found what it got, already quoted for a terminal
// (see Quote), or empty when there is nothing useful to show.
type Error struct {
	Source   string
	Line     int // 1-based
	Expected string
	Found    string
	// More is set on the one error a Limit gives at the end of an input
	// for the bad lines it did not show: how many there were.
	More int
}

// Error reads "SOURCE:LINE: expected EXPECTED, found FOUND", or for the
// bad lines not shown "SOURCE: … and N more bad lines (not shown)". The
// source is escaped: a file name can hold escape sequences too.
func (e *Error) Error() string {
	if e.More > 0 {
		return Printable(e.Source) + ": … and " + strconv.Itoa(e.More) + " more bad lines (not shown)"
	}
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

// Lines is how many bad lines e stands for: 1, or More.
func (e *Error) Lines() int { return max(1, e.More) }

// Shown is how many bad lines of an input a Limit lets through; the rest
// are counted and told in one line at the end.
const Shown = 20

// GiveUp is how many bad lines in a row end an input: a file that is not
// what the reader reads at all (a binary, the wrong log) is told as such
// after them, not line by line for ever.
const GiveUp = 10000

// Limit bounds what a reader reports of one input's bad lines, so that
// error output stays bounded whatever the input: the first Shown each,
// then one error counting the others (More) at the end; and after GiveUp
// bad lines in a row, an error that ends the input. Every reader that
// reports bad lines keeps one per input.
type Limit struct {
	// What a line should have been, for the error that gives up ("an
	// event of rdmatrace trace -j"); by default the bad line's Expected.
	What string

	bad, run, hidden int
	last             Error
	gaveUp           bool
}

// Bad takes a bad line's error and returns what the reader returns: err
// itself, nil when it is not to be shown (it is counted), or, at the
// GiveUp-th bad line in a row, an error that ends the input (the reader
// then returns io.EOF, after End).
func (l *Limit) Bad(err *Error) *Error {
	l.bad++
	l.run++
	l.last = *err
	if l.run >= GiveUp {
		l.gaveUp = true
		w := l.What
		if w == "" {
			w = what(err.Expected)
		}
		return &Error{Source: err.Source, Line: err.Line, Expected: w + " in the last " + strconv.Itoa(GiveUp) + " lines",
			Found: "none: not read further (is it the right file?)"}
	}
	if l.bad > Shown {
		l.hidden++
		return nil
	}
	return err
}

// what is the gist of an expectation: what comes before its first colon
// ("an event of rdmatrace trace -j"), or all of it.
func what(expected string) string {
	if i := strings.Index(expected, ": "); i > 0 {
		return expected[:i]
	}
	return expected
}

// Good notes a line that was read: the run of bad ones is over.
func (l *Limit) Good() { l.run = 0 }

// GaveUp reports whether the input is to be read no further.
func (l *Limit) GaveUp() bool { return l.gaveUp }

// End returns, once, the error that counts the bad lines not shown, or
// nil: the reader returns it before io.EOF.
func (l *Limit) End() *Error {
	if l.hidden == 0 {
		return nil
	}
	e := &Error{Source: l.last.Source, Line: l.last.Line, More: l.hidden}
	l.hidden = 0
	return e
}
