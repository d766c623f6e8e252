package formats

import "testing"

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
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzSanitizeLeavesNoControlBytes(f *testing.F) {
	f.Add("\x1b[31mred")
	f.Add("ok")
	f.Fuzz(func(t *testing.T, s string) {
		out := Sanitize(s)
		for i := 0; i < len(out); i++ {
			if c := out[i]; c < 0x20 || c == 0x7f {
				t.Fatalf("Sanitize(%q) = %q keeps control byte %#x", s, out, c)
			}
		}
	})
}
