package lineerr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorNamesSourceLineAndWhatWasExpected(t *testing.T) {
	for _, c := range []struct {
		err  Error
		want string
	}{
		{Error{"a.txt", 3, "SPACE", `"X"`, 0}, `a.txt:3: expected SPACE, found "X"`},
		{Error{"a.txt", 1, "an event", "", 0}, `a.txt:1: expected an event`},
		{Error{"evil\x1b]0;x\a", 2, "a line", "none", 0}, `evil\x1b]0;x\x07:2: expected a line, found none`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestErrorsAsFindsItWrapped(t *testing.T) {
	err := fmt.Errorf("parse: %w", &Error{Source: "a", Line: 1, Expected: "b"})
	var le *Error
	if !errors.As(err, &le) || le.Line != 1 {
		t.Fatalf("errors.As: %v", err)
	}
}

func TestQuoteEscapesAndCutsAtARune(t *testing.T) {
	if got := Quote([]byte("a\x1bb")); got != `"a\x1bb"` {
		t.Errorf("got %s", got)
	}
	long := strings.Repeat("é", 40) // 80 bytes: the cut falls inside a rune
	got := Quote([]byte(long))
	if !strings.HasSuffix(got, `..."`) && !strings.HasSuffix(got, `"...`) {
		t.Errorf("got %s, want it cut", got)
	}
	if strings.Contains(got, `\x`) {
		t.Errorf("got %s: a rune was split", got)
	}
}

// A reader that meets a million bad lines shows Shown of them, then one
// line counting the rest; the count keeps every line.
func TestLimitShowsTheFirstBadLinesThenCountsTheRest(t *testing.T) {
	var l Limit
	shown := 0
	for i := 1; i <= 1000; i++ {
		if i%2 == 0 {
			l.Good() // never GiveUp in a row
			continue
		}
		if e := l.Bad(&Error{Source: "r.ndjson", Line: i, Expected: "an event"}); e != nil {
			shown++
		}
	}
	end := l.End()
	if shown != Shown || end == nil || end.More != 500-Shown || shown+end.Lines() != 500 {
		t.Fatalf("shown %d, end %+v", shown, end)
	}
	if got, want := end.Error(), "r.ndjson: … and 480 more bad lines (not shown)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if l.End() != nil {
		t.Error("End told twice")
	}
	var quiet Limit
	if quiet.End() != nil {
		t.Error("End with nothing hidden")
	}
}

// A file that is not the right one ends after GiveUp bad lines in a row,
// in an error that says so.
func TestLimitGivesUpAfterALongRunOfBadLines(t *testing.T) {
	l := Limit{What: "an event of rdmatrace trace -j"}
	var last *Error
	for i := 1; !l.GaveUp(); i++ {
		if i > 2*GiveUp {
			t.Fatal("never gave up")
		}
		if e := l.Bad(&Error{Source: "x.bin", Line: i, Expected: "time in RFC 3339"}); e != nil {
			last = e
		}
	}
	want := "x.bin:10000: expected an event of rdmatrace trace -j in the last 10000 lines, found none: not read further (is it the right file?)"
	if last.Error() != want {
		t.Errorf("got %q, want %q", last, want)
	}
}
