package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// runCLI runs rdmatrace with args and returns stdout, stderr and the exit
// status main would give.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp()
	app.Reader, app.Writer, app.ErrWriter = strings.NewReader(stdin), &out, &errOut
	err := app.Run(append([]string{"rdmatrace"}, args...))
	code := 0
	if err != nil {
		code, err = exitCode(err) // as main does
		printError(&errOut, err)
	}
	return out.String(), errOut.String(), code
}

// TestParseGoldens runs `rdmatrace parse` over every fixture of
// testdata/debugfs/in (each arrival form and kind of input) in every
// output, and compares stdout, stderr and the exit status with the
// goldens. go test ./cmd/rdmatrace -run Goldens -update rewrites them.
func TestParseGoldens(t *testing.T) {
	goldens, err := filepath.Abs("../../testdata/debugfs/golden")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../../testdata/debugfs/in") // short, stable source names
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		for _, out := range []string{"table", "json", "legacy"} {
			name := e.Name() + "." + out
			t.Run(name, func(t *testing.T) {
				stdout, stderr, code := runCLI(t, "", "parse", "-o", out, e.Name())
				got := stdout + "--- stderr\n" + stderr + "--- exit status " + string(rune('0'+code)) + "\n"
				golden.Check(t, filepath.Join(goldens, name), []byte(got))
			})
		}
	}
}

func TestParseExitStatus(t *testing.T) {
	t.Chdir("../../testdata/debugfs/in")
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		inErr string
	}{
		{"every line understood", "", []string{"parse", "single.txt"}, 0, ""},
		{"some lines rejected", "", []string{"parse", "single.txt", "errors.txt"}, 1, "errors.txt:3: expected SPACE"},
		{"a missing file", "", []string{"parse", "single.txt", "nonexistent"}, 2, "nonexistent"},
		{"an unknown output", "", []string{"parse", "-o", "xml", "single.txt"}, 2, "unknown output"},
		{"an unknown flag", "", []string{"parse", "--frobnicate", "single.txt"}, 2, "frobnicate"},
		{"a bad filter", "", []string{"parse", "-f", "colour red", "single.txt"}, 2, "valid filters are"},
		{"standard input", "mthca0 0 0.0.0.0:7174 TCP LISTEN 0\n", []string{"parse", "-j", "-"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.inErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.inErr)
			}
		})
	}
}

func TestParseFilterSelectsRecords(t *testing.T) {
	t.Chdir("../../testdata/debugfs/in")
	out, _, code := runCLI(t, "", "parse", "-j", "-f", "state LISTEN src-port 7174", "single.txt", "concat.txt", "rdma-cmid.txt")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, %d records:\n%s", code, len(lines), out)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"state":"LISTEN"`) || !strings.Contains(l, `:7174"`) {
			t.Errorf("filtered in: %s", l)
		}
	}
	// A cm_id filter that means nothing for QPs drops them.
	out, _, _ = runCLI(t, "", "parse", "-j", "-f", "ps TCP", "rdma-qp.txt")
	if out != "" {
		t.Errorf("QPs pass a ps filter:\n%s", out)
	}
	out, _, _ = runCLI(t, "", "parse", "-j", "-f", "lqpn 17", "rdma-qp.txt")
	if strings.Count(out, "\n") != 1 {
		t.Errorf("lqpn 17 on QPs gives:\n%s", out)
	}
}

func TestStdinEchoesThroughLegacyOutput(t *testing.T) {
	in := "TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\nmthca0 0 0.0.0.0:7174 TCP LISTEN 0\nIB mthca0 1 ib0 192.30.3.249:46079 192.30.3.248:7174 TCP CONNECT 132102\n"
	out, stderr, code := runCLI(t, in, "parse", "-o", "legacy")
	if code != 0 || out != in {
		t.Errorf("exit %d, stderr %q, output\n%s", code, stderr, out)
	}
}

// noRawControls fails t when out holds a control byte other than a line
// end, a character that reorders or hides text (formats.Unsafe), or a byte
// that is not UTF-8.
func noRawControls(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not UTF-8: %q", what, out)
	}
	for _, line := range strings.Split(out, "\n") {
		for _, r := range line {
			if formats.Unsafe(r) {
				t.Errorf("%s: %U in %q", what, r, line)
			}
		}
	}
}

// TestParseOutputIsTerminalSafe: names in the input (extra columns, file
// names, process names) reach stdout and stderr escaped, in every output.
func TestParseOutputIsTerminalSafe(t *testing.T) {
	t.Chdir("../../testdata/debugfs/in")
	for _, out := range []string{"table", "json", "legacy"} {
		stdout, stderr, _ := runCLI(t, "", "parse", "-o", out, "hostile-keys.txt")
		noRawControls(t, out+" stdout", stdout)
		noRawControls(t, out+" stderr", stderr)
	}
	stdout, stderr, _ := runCLI(t, "", "parse", "hostile-keys.txt")
	if head, _, _ := strings.Cut(stdout, "\n"); strings.Contains(head, "EY") || !strings.Contains(head, "DRV_X") {
		t.Errorf("table headings %q: want DRV_X and no column for the hostile names", head)
	}
	if !strings.Contains(stderr, "2 value(s) under a name that is not [a-z0-9_-] were left out of the table") {
		t.Errorf("stderr does not count the left-out values:\n%s", stderr)
	}
}

// TestParseSkipsFIFOsWithANoteEach: a FIFO in a bundle is not read (it
// would block), each gets a line on stderr, and the exit status stays 0.
func TestParseSkipsFIFOsWithANoteEach(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k.txt"), []byte("link rxe0/1 cm-idn 3 state CONNECT ps TCP\n"), 0o644)
	for _, n := range []string{"f1", "f2"} {
		if err := syscall.Mkfifo(filepath.Join(dir, n), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	done := make(chan struct{})
	var stdout, stderr string
	var code int
	go func() { defer close(done); stdout, stderr, code = runCLI(t, "", "parse", "-j", dir) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("parse of a directory holding FIFOs still blocked after 20 s")
	}
	want := "rdmatrace: skipped " + filepath.Join(dir, "f1") + ": not a regular file (a FIFO)\n" +
		"rdmatrace: skipped " + filepath.Join(dir, "f2") + ": not a regular file (a FIFO)\n"
	if code != 0 || stderr != want || strings.Count(stdout, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant exit 0, one record and stderr\n%s", code, stdout, stderr, want)
	}
}

func TestErrorsReachStderrOneEscapedLineEach(t *testing.T) {
	var b bytes.Buffer
	printError(&b, errors.Join(errors.New("open a\x1b]0;T\a: denied"), errors.New("b\u202ec")))
	if got, want := b.String(), "rdmatrace: open a\\x1b]0;T\\x07: denied\nrdmatrace: b\\u202ec\n"; got != want {
		t.Errorf("printError wrote %q, want %q", got, want)
	}
}
