package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/host/launch"
)

// doctor's use case without a command line: with no process named it
// checks its own, every check answers, and a --qp-trace that cannot be
// read is an error naming the flag.
func TestRunChecksItselfAndRefusesAnUnreadableRecording(t *testing.T) {
	r, err := Run(Options{Log: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.PID != os.Getpid() || len(r.Findings) == 0 || r.Note != "" {
		t.Errorf("report of pid %d, %d findings, note %q; want this process's checks", r.Target.PID, len(r.Findings), r.Note)
	}
	_, err = Run(Options{QPTrace: filepath.Join(t.TempDir(), "none.ndjson"), Log: func(string) {}})
	if err == nil || !strings.HasPrefix(err.Error(), "--qp-trace: ") {
		t.Errorf("an unreadable --qp-trace: %v", err)
	}
}

// A program that ends before --after is not checked: its context is, and
// the note says so.
func TestRunOfAProgramThatEndedSaysWhatWasChecked(t *testing.T) {
	id, err := launch.ChooseUser("", func(string) string { return "" }, os.Geteuid(), launch.SystemUsers{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Options{Argv: []string{"true"}, User: id, After: 5e9, Log: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Note, "true ended (exit status 0) before 5s: its context, which is ours, was checked") {
		t.Errorf("note %q", r.Note)
	}
}
