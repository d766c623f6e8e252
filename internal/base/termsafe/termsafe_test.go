package termsafe

import "testing"

func TestSanitizeEscapesControlsFormatCharactersAndBackslashes(t *testing.T) {
	for in, want := range map[string]string{
		"rping":          "rping",
		"a\x1b]0;x\a":    `a\x1b]0;x\x07`,
		"\u202egnipr":    `\u202egnipr`,
		"c:\\d":          `c:\\d`,
		"bad\xffutf8":    `bad\xffutf8`,
		"\u009b31m":      `\u009b31m`,
		"line\u2028next": `line\u2028next`,
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
