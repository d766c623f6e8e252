package formats

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizeEscapesWhatATerminalWouldObey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rping", "rping"},
		{"", ""},
		{"a b-c_d.e", "a b-c_d.e"},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\x07`},
		{"tab\there", `tab\x09here`},
		{"nl\n", `nl\x0a`},
		{"del\x7f", `del\x7f`},
		{`back\slash`, `back\\slash`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"ünïcödé", "ünïcödé"},
		// D13: bidi and invisible characters disguise a name.
		{"\u202egnipr", `\u202egnipr`},
		{"a\u202a\u202b\u202c\u202d\u202eb", `a\u202a\u202b\u202c\u202d\u202eb`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"r\u200bp\u200c\u200d\u200e\u200fing", `r\u200bp\u200c\u200d\u200e\u200fing`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"\ufeffbom", `\ufeffbom`},
		{"soft\u00adhyphen", `soft\u00adhyphen`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"日本語", "日本語"},
		{"\ufffd", "\ufffd"}, // a real replacement character stays: only invalid bytes are escaped
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSanitizeOfPlainASCIIDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Sanitize("rping-server_01 [x]") }); n != 0 {
		t.Errorf("Sanitize allocates %v times for plain ASCII", n)
	}
}

func TestErrorLinesPutsEachJoinedErrorOnItsOwnLine(t *testing.T) {
	err := errors.Join(errors.New("open a\x1b: denied"), fmt.Errorf("ctx: %w", errors.Join(errors.New("b"), errors.New("c\nd"))))
	got := ErrorLines(err)
	want := []string{`open a\x1b: denied`, `ctx: b\x0ac\x0ad`}
	if !slices.Equal(got, want) {
		t.Errorf("ErrorLines = %q, want %q", got, want)
	}
	got = ErrorLines(errors.Join(errors.New("x"), errors.New("y")))
	if !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("ErrorLines of a join = %q", got)
	}
}

// terminalSafe fails t when s holds a byte or character a terminal would
// obey or hide, or a byte that is not UTF-8. U+FFFD itself, well encoded,
// is a printable character like any other (fuzzing gave it as input).
func terminalSafe(t *testing.T, in, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%q gives %q, which is not UTF-8", in, s)
	}
	for _, r := range s {
		if Unsafe(r) {
			t.Fatalf("%q gives %q, which keeps %U", in, s, r)
		}
	}
}

// terminalSafeLines is terminalSafe for output made of lines.
func terminalSafeLines(t *testing.T, in, s string) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		terminalSafe(t, in, line)
	}
}

func FuzzSanitizeLeavesNoControlBytes(f *testing.F) {
	f.Add("\x1b[31mred")
	f.Add("ok")
	f.Add("\u202egnipr\u200b\ufeff")
	f.Add("\U000e0041\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		terminalSafe(t, s, Sanitize(s))
	})
}
