package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestLeakLogGoldens runs the post-mortem `rdmatrace leaks --log` over the
// kernel logs of testdata/kernlog, and over the dmesg and `trace -j`
// recording that e2e TestLeaksNamesWhatAKernelModuleLeft kept on each
// kernel (testdata/leaklog/KERNEL), in both outputs.
func TestLeakLogGoldens(t *testing.T) {
	golden, err := filepath.Abs("../../testdata/leaklog/golden")
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
				path := filepath.Join(golden, name+"."+out)
				if *update {
					if err := os.MkdirAll(golden, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("rdmatrace %v:\n%s\nwant:\n%s", a, got, want)
				}
			})
		}
	}
}
