package leaks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lineio "github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/tracer"
)

// leaks --log as a use case, without the command line: how the
// post-mortem went is its exit status, the worst first (an input that
// could not be read, then a report, then lines not understood), and stdin
// is refused twice before anything is read.
func TestFromLogsEndsWithTheStatusOfWhatItRead(t *testing.T) {
	kernlog := filepath.Join("..", "..", "..", "testdata", "kernlog")
	notALog := filepath.Join(t.TempDir(), "not-a-log")
	if err := os.WriteFile(notALog, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(kernlog, "named-restrack.dmesg")
	for _, tc := range []struct {
		name   string
		logs   []string
		status int
		read   bool // the sink got the report
	}{
		{"a report", []string{named}, ExitLeaked, true},
		{"a report, then a missing file", []string{named, "nonexistent"}, 2, true},
		{"no kernel log", []string{notALog}, 1, false},
		{"stdin twice", []string{lineio.Stdin, lineio.Stdin}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &noteSink{}
			var warned []string
			err := FromLogs(LogOptions{Logs: tc.logs, Stdin: strings.NewReader(""), Warn: func(l string) { warned = append(warned, l) }}, sink)
			var ee *tracer.ExitError
			if !errors.As(err, &ee) || ee.Code != tc.status {
				t.Fatalf("FromLogs = %v, want exit status %d", err, tc.status)
			}
			if got := len(sink.out) > 0; got != tc.read {
				t.Errorf("report written: %v, want %v (%q; stderr %q)", got, tc.read, sink.out, warned)
			}
		})
	}
}
