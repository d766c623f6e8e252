package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
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

// `res show NAME` with a NAME that is no type is a device, as `dev show`
// takes it: a device that is not there is said with the devices there
// are (on a machine without RDMA, that there is no RDMA netlink), never
// "unknown resource type".
func TestResShowOfAnUnknownDeviceSaysTheDevices(t *testing.T) {
	_, err := nldev.Dial()
	for _, args := range [][]string{{"res", "show", "nosuch0"}, {"-j", "res", "s", "nosuch0"}} {
		stdout, stderr, code := rdmatrace(t, args...)
		if strings.Contains(stderr, "resource type") && !strings.Contains(stderr, "unknown device") || code != 1 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and an unknown device", args, code, stdout, stderr)
		}
		if err == nil && !strings.Contains(stderr, `unknown device "nosuch0"`) {
			t.Errorf("%v: %q, want the devices there are", args, stderr)
		}
	}
	// Without show, or with filter words after it, the word is a type: a
	// mistyped one stays a usage error.
	for _, args := range [][]string{{"res", "qpp"}, {"res", "show", "qpp", "state", "RTS"}} {
		if _, stderr, code := rdmatrace(t, args...); code != 2 || !strings.Contains(stderr, `unknown resource type "qpp"`) {
			t.Errorf("%v: exit %d, %q; want the usage error", args, code, stderr)
		}
	}
}

// why says its error and nothing else: "nothing went wrong" means it
// looked, and a run that could not look (no RDMA, a recording it could
// not read) did not.
func TestWhyThatFailedDoesNotSayNothingWentWrong(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	if err := os.WriteFile(bad, []byte("not an event\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := [][]string{{"why", "-r", bad}, {"why", "-r", filepath.Join(t.TempDir(), "missing.ndjson")}}
	if _, err := nldev.Dial(); err != nil {
		runs = append(runs, []string{"why", "--duration", "1s"}) // no RDMA here
	}
	for _, args := range runs {
		stdout, stderr, code := rdmatrace(t, args...)
		if code == 0 || strings.Contains(stdout, "nothing went wrong") || stderr == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the error alone and a non-zero status", args, code, stdout, stderr)
		}
	}
	// A recording read whole with no failure in it: nothing went wrong.
	empty := filepath.Join(t.TempDir(), "empty.ndjson")
	os.WriteFile(empty, nil, 0o600)
	if stdout, stderr, code := rdmatrace(t, "why", "-r", empty); code != 0 || stdout != "nothing went wrong\n" {
		t.Errorf("why -r EMPTY: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// doctor -- CMD for a program that runs on (a server) says, once checked,
// that it waits for it and how to end it, then waits.
func TestDoctorSaysItWaitsForAProgramThatRunsOn(t *testing.T) {
	stdout, stderr, _ := rdmatrace(t, "doctor", "-j", "--after", "200ms", "--", "sh", "-c", "sleep 2")
	if !strings.Contains(stderr, "runs on after the check: waiting for it to exit (Ctrl-C, or kill ") || !strings.Contains(stdout, `"check"`) {
		t.Errorf("doctor -- sh -c 'sleep 2': stdout %q, stderr %q; want the checks, and the wait said", stdout, stderr)
	}
	if _, stderr, _ := rdmatrace(t, "doctor", "--after", "2s", "--", "true"); strings.Contains(stderr, "waiting for it") {
		t.Errorf("doctor -- true: %q; a program that ended is not waited for", stderr)
	}
}
