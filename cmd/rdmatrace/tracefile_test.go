package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// trace -r reads a recording through trace's filters and views, needing
// neither BPF nor root: the human view with each --timestamp, -j, and a
// filter; the output is the same whichever way the file is compressed.
func TestTraceReadsARecordingGolden(t *testing.T) {
	rec := filepath.Join("..", "..", "testdata", "leaklog", "6.12", "trace.ndjson")
	var out strings.Builder
	for _, args := range [][]string{
		{"trace", "-r", rec, "--timestamp", "relative", "-c", "12"},
		{"trace", "-r", rec, "--timestamp", "none", "qp", "event", "create,destroy"},
		{"trace", "-r", rec, "-j", "-c", "3"},
	} {
		stdout, stderr, code := rdmatrace(t, args...)
		out.WriteString("--- " + strings.Join(args[3:], " ") + "\n" + stdout + "--- stderr\n" + stderr + "--- exit status " + strconv.Itoa(code) + "\n")
		if code != 0 {
			t.Errorf("rdmatrace %v: exit %d: %s", args, code, stderr)
		}
	}
	goldenCLI(t, "trace-read.txt", out.String())
}

// A bad line is named (file, line, what was expected); the rest is still
// shown; the exit status is 1.
func TestTraceReadNamesBadLinesAndGoesOn(t *testing.T) {
	good := `{"time":"2026-11-23T18:00:00.5Z","event":"create","res":"pd","ifname":"rxe0","id":3,"pid":301,"comm":"leakqp"}`
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	os.WriteFile(path, []byte(good+"\n{\"time\":\"yesterday\"}\n"+good+"\n"), 0o644)
	stdout, stderr, code := rdmatrace(t, "trace", "-r", path, "--timestamp", "none")
	if code != 1 || strings.Count(stdout, "create") != 2 || !strings.Contains(stderr, "rec.ndjson:2:") || !strings.Contains(stderr, "1 lines were not events") {
		t.Errorf("exit %d\nstdout %q\nstderr %q\nwant both good lines shown, line 2 named, exit 1", code, stdout, stderr)
	}
	if _, stderr, code := rdmatrace(t, "trace", "-r", filepath.Join(t.TempDir(), "missing")); code != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("a missing recording: exit %d, %q", code, stderr)
	}
}

// The flags that go together, and those that do not, are usage errors
// before anything is attached.
func TestTraceRecordingFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"trace", "-C", "10"}, {"trace", "--print"}, {"trace", "-w", "x", "-W", "3"},
		{"trace", "-w", "-", "--print"}, {"trace", "-r", "x", "-w", "y"}, {"trace", "-r", "x", "--", "true"},
		{"trace", "--timestamp", "epoch"}, {"trace", "-w", "x", "-C", "-1"}, {"trace", "-w", "x", "-C", "1", "-W", "0"},
	} {
		_, stderr, code := rdmatrace(t, args...)
		if code != 2 || !strings.HasPrefix(stderr, "rdmatrace: trace: ") {
			t.Errorf("rdmatrace %v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
}

// doctor -- CMD runs CMD, not "--": a word before -- is a usage error.
func TestDoctorRunsTheCommandAfterTheSeparator(t *testing.T) {
	stdout, stderr, code := rdmatrace(t, "doctor", "-j", "--after", "5s", "--", "sh", "-c", "echo ran-$((40+2))")
	if !strings.Contains(stdout, "ran-42") || !strings.Contains(stdout, `"check":"modules"`) {
		t.Errorf("doctor -- sh: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if _, stderr, code := rdmatrace(t, "doctor", "ib_write_lat"); code != 2 || !strings.Contains(stderr, "after --") {
		t.Errorf("doctor ib_write_lat: exit %d, %q", code, stderr)
	}
}
