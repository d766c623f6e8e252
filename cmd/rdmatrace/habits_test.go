package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --version and -V print the stamped version (failed before: unknown flag).
func TestVersionFlags(t *testing.T) {
	for _, flag := range []string{"--version", "-V"} {
		stdout, stderr, code := rdmatrace(t, flag)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "rdmatrace ") || strings.Count(stdout, "\n") != 1 {
			t.Errorf("rdmatrace %s: exit %d, stdout %q, stderr %q; want one line \"rdmatrace VERSION\"", flag, code, stdout, stderr)
		}
	}
}

// help and help COMMAND show the help (failed before: "No help topic").
func TestHelpCommand(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"help", "rdmatrace [-j] [-p] [-d] COMMAND"},
		{"help res", "rdmatrace res - list RDMA resources"},
		{"help resource", "rdmatrace res - list RDMA resources"},
		{"help trace", "rdmatrace trace - stream RDMA"},
	} {
		stdout, stderr, code := rdmatrace(t, strings.Fields(tc.args)...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, tc.want) {
			t.Errorf("rdmatrace %s: exit %d, stderr %q, stdout without %q:\n%s", tc.args, code, stderr, tc.want, stdout)
		}
	}
}

// dev show DEV, link show DEV/PORT: "show" was taken for the device name.
func TestDropShowTakesIproute2Abbreviations(t *testing.T) {
	for in, want := range map[string]string{
		"show rxe0": "rxe0", "s qp": "qp", "sh": "", "list qp": "qp", "rxe0": "rxe0", "": "",
		"srq": "srq", "showx": "showx",
	} {
		if got := strings.Join(dropShow(strings.Fields(in)), " "); got != want {
			t.Errorf("dropShow(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResShowDevTellsDevicesFromTypes(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"rxe0", "mlx5_0"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := sysClassInfiniband
	sysClassInfiniband = dir
	defer func() { sysClassInfiniband = old }()
	for in, want := range map[string]bool{"rxe0": true, "mlx5_0": true, "qp": false, "rxe1": false, "../" + filepath.Base(dir): false, "m": false} {
		if got := isDevice(in); got != want {
			t.Errorf("isDevice(%q) = %v, want %v", in, got, want)
		}
	}
}
