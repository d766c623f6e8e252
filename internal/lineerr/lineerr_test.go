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
		{Error{"a.txt", 3, "SPACE", `"X"`}, `a.txt:3: expected SPACE, found "X"`},
		{Error{"a.txt", 1, "an event", ""}, `a.txt:1: expected an event`},
		{Error{"evil\x1b]0;x\a", 2, "a line", "none"}, `evil\x1b]0;x\x07:2: expected a line, found none`},
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
