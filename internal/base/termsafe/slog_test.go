package termsafe

import (
	"bytes"
	"log/slog"
	"testing"
)

func TestHandlerWritesPrefixedSafeLines(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(NewHandler(&out, "rdmatrace", nil))
	log.Info("open /x\x1b[2J: no such file")
	log.Warn(`already escaped: comm "\x1b]0;" stays`, "comm", "evil\u202e")
	log.Debug("not shown")
	want := "rdmatrace: open /x\\x1b[2J: no such file\n" +
		"rdmatrace: already escaped: comm \"\\x1b]0;\" stays comm=evil\\u202e\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestSafeIsSanitizeLeavingBackslashes(t *testing.T) {
	for _, s := range []string{"plain", "a\x1bb", "x\xffy", "\u202eabc", `back\slash`, "tab\tnl\n"} {
		if got, twice := Safe(s), Safe(Safe(s)); got != twice {
			t.Errorf("Safe(%q) = %q, but twice %q", s, got, twice)
		}
		if got := Safe(Sanitize(s)); got != Sanitize(s) {
			t.Errorf("Safe(Sanitize(%q)) = %q, want it unchanged", s, got)
		}
	}
}
