package lines

import (
	"bytes"
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

// nonBlank reads r, calling SkipBlank after each blank line when skip is
// set, and gives its other lines and their numbers.
func nonBlank(r *Reader, skip bool) []step {
	var got []step
	for {
		b, err := r.Next()
		if err == io.EOF {
			return got
		}
		s := step{line: string(b), n: r.Line(), unterminated: r.Unterminated()}
		if err != nil {
			s.err = err.Error()
			got = append(got, s)
			var le *lineerr.Error
			if !errors.As(err, &le) {
				return got
			}
			continue
		}
		if strings.Trim(string(b), " \t\r") != "" || s.unterminated {
			got = append(got, s)
		} else if skip {
			r.SkipBlank()
		}
	}
}

func TestSkipBlankCountsTheBlankLinesItPasses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []step
	}{
		{"a\n\n \n\t\r\n\nb\n  \nc", []step{{"a", 1, false, ""}, {"b", 6, false, ""}, {"c", 8, true, ""}}},
		{"a\n\n   ", []step{{"a", 1, false, ""}, {"   ", 3, true, ""}}},
		{strings.Repeat("\n", 3*Max) + "x\n", []step{{"x", 3*Max + 1, false, ""}}},
		{strings.Repeat(" \r\n", Max) + strings.Repeat(" ", 2*Max) + "\nz", []step{
			{"", Max + 1, false, "in:65537: expected a line of at most 65536 bytes, found a line of 131073 bytes"}, {"z", Max + 2, true, ""}}},
	} {
		for _, oneByte := range []bool{false, true} {
			var in io.Reader = strings.NewReader(tc.in)
			if oneByte {
				in = iotest.OneByteReader(in)
			}
			got := nonBlank(NewReader(in, "in"), true)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%.20q (one byte at a time: %v):\ngot  %+v\nwant %+v", tc.in, oneByte, got, tc.want)
			}
		}
	}
}

// A run of blank lines costs a byte scan: a gigabyte of newlines (a
// decompressed bomb's) is read in about a second, not a Next each.
//
//	go test -run '^$' -bench SkipBlank -benchmem -cpu 1 ./internal/base/lines/
func BenchmarkSkipBlank(b *testing.B) {
	for _, skip := range []bool{false, true} {
		b.Run(map[bool]string{false: "next", true: "skip"}[skip], func(b *testing.B) {
			in := []byte(strings.Repeat("\n", 16<<20))
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if got := nonBlank(NewReader(bytes.NewReader(in), "in"), skip); len(got) != 0 {
					b.Fatal(got)
				}
			}
		})
	}
}

func TestDrainCountsAndTellsBadLinesAndStopsAtAReadError(t *testing.T) {
	boom := errors.New("boom")
	errs := []error{nil, &lineerr.Error{Line: 2}, nil, &lineerr.Error{More: 7}, boom, nil}
	var told []int
	bad, err := Drain(func() error { e := errs[0]; errs = errs[1:]; return e }, func(le *lineerr.Error) { told = append(told, le.Line) })
	if bad != 8 || err != boom || !slices.Equal(told, []int{2, 0}) || len(errs) != 1 {
		t.Errorf("bad %d, err %v, told %v, left %d", bad, err, told, len(errs))
	}
	errs = []error{&lineerr.Error{Line: 1}, io.EOF}
	if bad, err := Drain(func() error { e := errs[0]; errs = errs[1:]; return e }, nil); bad != 1 || err != nil {
		t.Errorf("at the end: bad %d, err %v", bad, err)
	}
}

func TestStdinOnce(t *testing.T) {
	if err := StdinOnce([]string{"a", "-", "b"}, "x"); err != nil {
		t.Error(err)
	}
	if err := StdinOnce([]string{"-", "a", "-"}, "give it to one"); err == nil || err.Error() != "stdin (-) can be read once: give it to one" {
		t.Errorf("got %v", err)
	}
}

func FuzzNext(f *testing.F) {
	f.Add([]byte("a\r\nb\n\nc"))
	f.Add([]byte("a\n\n \n\t\r\n\nb\n  \nc  "))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(strings.NewReader(string(data)), "fuzz")
		for i := 0; i <= len(data)+1; i++ {
			b, err := r.Next()
			if err == io.EOF {
				break
			}
			if len(b) > Max || strings.ContainsAny(string(b), "\n") {
				t.Fatalf("line %q", b)
			}
			if i == len(data)+1 {
				t.Fatal("more lines than bytes")
			}
		}
		// SkipBlank passes over blank lines only, and counts them.
		plain := nonBlank(NewReader(strings.NewReader(string(data)), "fuzz"), false)
		skipped := nonBlank(NewReader(iotest.HalfReader(strings.NewReader(string(data))), "fuzz"), true)
		if !slices.Equal(plain, skipped) {
			t.Fatalf("with SkipBlank\n%+v\nwithout\n%+v", skipped, plain)
		}
	})
}
