package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
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

// A recording whose device was unregistered again and again with many
// objects alive named every object at every beginning, and all of it was
// kept: a 1.2 MB recording took 7.4 GB (D8). Only what the log's reports
// are about is kept now.
func TestRecordingKeepsOnlyWhatTheLogNames(t *testing.T) {
	var b strings.Builder
	at := func(i int) string { return time.Unix(1_800_000_000, int64(i)*1000).UTC().Format(time.RFC3339Nano) }
	n := 0
	for i := 0; i < 500; i++ {
		n++
		fmt.Fprintf(&b, `{"time":%q,"event":"create","res":"pd","ifname":"rxe0","id":%d,"pid":100,"comm":"app"}`+"\n", at(n), i)
	}
	for i := 0; i < 2000; i++ {
		n++
		fmt.Fprintf(&b, `{"time":%q,"event":"dev_unregister","ifname":"rxe0","actor-pid":%d,"actor-comm":"rdma"}`+"\n", at(n), 1000+i)
	}
	p := &postMortem{stdin: strings.NewReader(b.String()), stderr: io.Discard, sink: newFindingSink(io.Discard, false)}
	// A hung task (pid 1500) and a WARNING (pid 1501) of the log.
	rec := p.replayRecording("-", func(*rdma.Event) bool { return true }, wantedBy([]*rdma.KernelReport{
		{Kind: rdma.KernHungUnregister, PID: 1500}, {Kind: rdma.KernRestrackWarning, PID: 1501}}))
	if rec == nil || p.bad != 0 || p.failed != 0 {
		t.Fatalf("replay: %d bad lines, %d failures", p.bad, p.failed)
	}
	// The hung task's unregistration began with the 500 PDs alive; the
	// WARNING's task has no finding (it did not finish).
	if rec.kept != 500 || len(rec.byPID[1500]) != 500 || len(rec.byPID) != 1 {
		t.Errorf("kept %d findings of %d tasks, want the 500 of pid 1500 only", rec.kept, len(rec.byPID))
	}
}
