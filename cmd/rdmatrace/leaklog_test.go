package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// TestLeakLogGoldens runs the post-mortem `rdmatrace leaks --log` over the
// kernel logs of testdata/kernlog, and over the dmesg and `trace -j`
// recording that e2e TestLeaksNamesWhatAKernelModuleLeft kept on each
// kernel (testdata/leaklog/KERNEL), in both outputs.
func TestLeakLogGoldens(t *testing.T) {
	goldens, err := filepath.Abs("../../testdata/leaklog/golden")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../../testdata")
	// The logs' wall-clock stamps name no zone: the machine's, UTC here.
	local := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = local })
	cases := map[string][]string{
		"kmod-6.12":    {"--log", "kernlog/debian-6.12-kmod-leak.dmesg"},
		"hung-6.1":     {"--log", "kernlog/debian-6.1-hung-unregister.dmesg"},
		"named":        {"--log", "kernlog/named-restrack.dmesg"},
		"truncated":    {"--log", "kernlog/truncated.dmesg"},
		"two-logs":     {"--log", "kernlog/named-restrack.dmesg", "--log", "kernlog/journal.txt"},
		"no-such-file": {"--log", "kernlog/nonexistent"},
		// D11: the reports of the first are shown before the second is found missing.
		"then-missing": {"--log", "kernlog/named-restrack.dmesg", "--log", "kernlog/nonexistent"},
		// D16: a named report without its device line.
		"named-no-device": {"--log", "kernlog/named-no-device.dmesg"},
		// D10: compressed logs, told by their magic; what is not a kernel log is said.
		"gzip":              {"--log", "decompress/dmesg.txt.gz"},
		"xz":                {"--log", "decompress/dmesg.txt.xz"},
		"zstd":              {"--log", "decompress/dmesg.txt.zst"},
		"bzip2":             {"--log", "decompress/dmesg.txt.bz2"},
		"truncated-gzip":    {"--log", "decompress/truncated.txt.gz", "--log", "kernlog/named-restrack.dmesg"},
		"missing-recording": {"--log", "leaklog/6.12/dmesg.txt", "--recording", "leaklog/nonexistent.ndjson"},
		"not-a-log":         {"--log", "leaklog/not-a-log.bin", "--log", "leaklog/empty.log", "--log", "leaklog/6.12/trace.ndjson"},
		// mlx5's QP error syndromes, written after the kernel's format
		// string, joined with a recording written in trace -j's form: in
		// each log form, by the QP alive at the line's wall-clock time;
		// dmesg's seconds since boot only where the QP number is unique.
		"syndrome":           {"--log", "leaklog/mlx5-syndrome/dmesg-T.txt"},
		"syndrome-dmesg-T":   {"--log", "leaklog/mlx5-syndrome/dmesg-T.txt", "--recording", "leaklog/mlx5-syndrome/trace.ndjson"},
		"syndrome-dmesg":     {"--log", "leaklog/mlx5-syndrome/dmesg.txt", "--recording", "leaklog/mlx5-syndrome/trace.ndjson"},
		"syndrome-journal":   {"--log", "leaklog/mlx5-syndrome/journal.txt", "--recording", "leaklog/mlx5-syndrome/trace.ndjson"},
		"syndrome-comm":      {"--log", "leaklog/mlx5-syndrome/dmesg-T.txt", "--recording", "leaklog/mlx5-syndrome/trace.ndjson", "--filter-comm", "rping"},
		"syndrome-and-leaks": {"--log", "leaklog/mlx5-syndrome/dmesg-T.txt", "--log", "leaklog/6.12/dmesg.txt", "--recording", "leaklog/6.12/trace.ndjson"},
	}
	for _, k := range []string{"6.1", "6.12"} {
		if _, err := os.Stat(filepath.Join("leaklog", k, "trace.ndjson")); err == nil {
			cases["recording-"+k] = []string{"--log", "leaklog/" + k + "/dmesg.txt", "--recording", "leaklog/" + k + "/trace.ndjson"}
		}
	}
	for name, args := range cases {
		for _, out := range []string{"txt", "ndjson"} {
			t.Run(name+"."+out, func(t *testing.T) {
				a := append([]string{"leaks"}, args...)
				if out == "ndjson" {
					a = append(a, "-j")
				}
				stdout, stderr, code := runCLI(t, "", a...)
				got := stdout + "--- stderr\n" + stderr + "--- exit status " + strconv.Itoa(code) + "\n"
				golden.Check(t, filepath.Join(goldens, name+"."+out), []byte(got))
			})
		}
	}
}

// `--log -` reads stdin, compressed or not, and calls it stdin (D16).
func TestLeakLogReadsStdin(t *testing.T) {
	for _, file := range []string{"../../testdata/kernlog/named-restrack.dmesg", "../../testdata/decompress/dmesg.txt.gz"} {
		in, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI(t, string(in), "leaks", "--log", "-")
		if code != exitLeaked || stderr != "" || !strings.HasPrefix(stdout, "stdin:") {
			t.Errorf("%s on stdin: exit %d, stderr %q, stdout %q", file, code, stderr, stdout)
		}
	}
	if _, stderr, code := runCLI(t, "", "leaks", "--log", "-", "--log", "-"); code != 2 || !strings.Contains(stderr, "stdin (-) can be read once") {
		t.Errorf("stdin twice: exit %d, stderr %q", code, stderr)
	}
}

// File names are escaped before they reach a terminal, in every message
// and report that names them (D12).
func TestLeakLogEscapesFileNames(t *testing.T) {
	dir := t.TempDir()
	evil := "\x1b]0;owned\x07\u202e"
	truncated, err := os.ReadFile("../../testdata/kernlog/truncated.dmesg")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	logPath := write(evil+".dmesg", truncated)
	notLog := write(evil+".txt", []byte("hello\n"))
	rec := write(evil+".ndjson", []byte("{\"time\":\"x\"}\n"))
	for _, args := range [][]string{
		{"leaks", "--log", logPath, "--log", notLog, "--log", filepath.Join(dir, evil+"missing")},
		{"leaks", "--log", logPath, "--recording", rec},
		{"leaks", "--log", logPath, "--recording", filepath.Join(dir, evil+"missing")},
	} {
		stdout, stderr, _ := runCLI(t, "", args...)
		for _, out := range []string{stdout, stderr} {
			if strings.ContainsAny(strings.ReplaceAll(out, "\n", ""), "\x1b\x07") || !strings.Contains(out, `\x1b]0;owned\x07`) {
				t.Errorf("rdmatrace %q wrote %q", args, out)
			}
		}
	}
}

// why -r --log: mlx5's QP error syndromes (lines written after the
// kernel's format string) listed among an owner's failures, by the QP
// the recording has alive at the line's time; the ones without a QP are
// said on stderr. The recording is written in trace -j's form.
func TestWhyListsTheLogsQPErrorSyndromes(t *testing.T) {
	t.Setenv("TZ", "UTC")
	dir := "../../testdata/leaklog/mlx5-syndrome/"
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"why-syndrome.txt", []string{"why", "-r", dir + "trace.ndjson", "--log", dir + "dmesg-T.txt"}, 0},
		{"why-syndrome.ndjson", []string{"why", "-r", dir + "trace.ndjson", "--log", dir + "dmesg-T.txt", "-j"}, 0},
		{"why-syndrome-pid.txt", []string{"why", "-r", dir + "trace.ndjson", "--log", dir + "dmesg-T.txt", "--log", dir + "dmesg.txt", "--pid", "4200"}, 0},
		{"why-syndrome-qpn.txt", []string{"why", "-r", dir + "trace.ndjson", "--log", dir + "journal.txt", "--qpn", "137"}, 0},
		{"why-syndrome-bad.txt", []string{"why", "-r", dir + "trace.ndjson", "--log", "../../testdata/kernlog/mlx5-syndrome.dmesg"}, 1},
	} {
		stdout, stderr, code := rdmatrace(t, tc.args...)
		goldenCLI(t, tc.name, stdout+"--- stderr\n"+stderr+"--- exit status "+strconv.Itoa(code)+"\n")
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
	if _, stderr, code := rdmatrace(t, "why", "--log", dir+"dmesg.txt", "--pid", "1"); code != 2 || !strings.Contains(stderr, "--log needs a recording") {
		t.Errorf("--log without -r: exit %d, stderr %q", code, stderr)
	}
}

// why -r --log with a log of thirty thousand syndromes the recording
// cannot join (the same line again and again, as a flood or a log given
// twice): a line or two on stderr, not one a syndrome, and exit status 1:
// nothing asked could be answered.
func TestWhyWithALogOfUnjoinableSyndromesSaysSoInAFewLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), "flood.txt")
	line := "[Fri Nov 27 07:20:05 2026] mlx5_0/1: QP 9999 error: local protection error (0x41 0x0 0x0)\n"
	if err := os.WriteFile(log, []byte(strings.Repeat(line, 30000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := rdmatrace(t, "why", "-r", "../../testdata/leaklog/mlx5-syndrome/trace.ndjson", "--log", log)
	if n := strings.Count(stderr, "\n"); n > 3 || code != 1 || !strings.Contains(stderr, "30000 syndromes for QPs the recording does not have") {
		t.Errorf("exit %d, %d lines on stderr:\n%.500s", code, n, stderr)
	}
}
