package lines

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
)

type step struct {
	line         string
	n            int
	unterminated bool
	err          string
}

func readAll(r *Reader) []step {
	var got []step
	for {
		b, err := r.Next()
		if err == io.EOF {
			return got
		}
		s := step{line: string(b), n: r.Line(), unterminated: r.Unterminated()}
		if err != nil {
			s.err = err.Error()
			var le *lineerr.Error
			if !errors.As(err, &le) {
				got = append(got, s)
				return got
			}
		}
		got = append(got, s)
	}
}

func same(t *testing.T, got, want []step) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestLinesEndInLFOrCRLFAndTheLastMayHaveNone(t *testing.T) {
	got := readAll(NewReader(strings.NewReader("a\r\nb\n\nc"), "in"))
	want := []step{{"a", 1, false, ""}, {"b", 2, false, ""}, {"", 3, false, ""}, {"c", 4, true, ""}}
	same(t, got, want)
}

func TestALongLineIsAnErrorNamingItAndReadingGoesOn(t *testing.T) {
	in := "a\n" + strings.Repeat("x", 3*Max) + "\nb\n" + strings.Repeat("y", Max+1)
	got := readAll(NewReader(strings.NewReader(in), "f\x1b"))
	want := []step{
		{"a", 1, false, ""},
		{"", 2, false, `f\x1b:2: expected a line of at most 65536 bytes, found a line of 196609 bytes`},
		{"b", 3, false, ""},
		{"", 4, false, `f\x1b:4: expected a line of at most 65536 bytes, found a line of 65537 bytes`},
	}
	same(t, got, want)
}

func TestAReadErrorIsReturnedAsItCame(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), "in")
	if b, err := r.Next(); err != nil || string(b) != "a" {
		t.Fatalf("first line %q, %v", b, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
}

func TestPeekAndReadSeeTheRestOfTheInput(t *testing.T) {
	r := NewReader(strings.NewReader("\xef\xbb\xbfa\n[1]"), "in")
	if b, _ := r.Peek(3); string(b) != "\xef\xbb\xbf" {
		t.Fatalf("peek %q", b)
	}
	r.Discard(3)
	if b, err := r.Next(); err != nil || string(b) != "a" {
		t.Fatalf("line %q, %v", b, err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "[1]" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

func FuzzNext(f *testing.F) {
	f.Add([]byte("a\r\nb\n\nc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(strings.NewReader(string(data)), "fuzz")
		for i := 0; i <= len(data)+1; i++ {
			b, err := r.Next()
			if err == io.EOF {
				return
			}
			if len(b) > Max || strings.ContainsAny(string(b), "\n") {
				t.Fatalf("line %q", b)
			}
		}
		t.Fatal("more lines than bytes")
	})
}
