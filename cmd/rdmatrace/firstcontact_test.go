package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// On a kernel without RDMA (this host: no modules, no ib_core), trace and
// leaks say so in a line or two, not with each hook's CO-RE and verifier
// errors (28 lines, 8 KB before).
func TestTracingWithoutRDMASaysSoInALine(t *testing.T) {
	if _, err := os.Stat("/sys/module/ib_core"); err == nil {
		t.Skip("this kernel has ib_core; the guest tests cover tracing")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to get past the privileges check")
	}
	for _, args := range [][]string{{"trace"}, {"trace", "-j", "--duration", "1s"}, {"leaks"}} {
		stdout, stderr, code := rdmatrace(t, args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || stdout != "" || len(lines) > 2 || len(stderr) > 400 || !strings.Contains(stderr, "ib_core") {
			t.Errorf("rdmatrace %v: exit %d, stdout %q, %d lines (%d bytes) on stderr:\n%s\nwant exit 1, no stdout, at most 2 lines naming ib_core",
				args, code, stdout, len(lines), len(stderr), stderr)
		}
	}
}

// asNobody gives setpriv and a copy of the test binary that nobody may run
// (its directory is the third value), or skips: becoming nobody needs root.
func asNobody(t *testing.T) (setpriv, bin, dir string) {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv, to become nobody (CI runs as root)")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "rdmatrace")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// t.TempDir's folders are 0700 below a root-only parent: open the
	// path to nobody.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return setpriv, bin, dir
}

// As a user without capabilities, trace and leaks name the capabilities
// they need, in one line, before loading anything.
func TestTracingWithoutPrivilegesNamesThemInALine(t *testing.T) {
	setpriv, bin, _ := asNobody(t)
	for _, sub := range []string{"trace", "leaks"} {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, sub)
		cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if err == nil || stdout.Len() > 0 || len(lines) != 1 || !strings.Contains(lines[0], "CAP_BPF and CAP_PERFMON") {
			t.Errorf("rdmatrace %s as nobody: %v, stdout %q, stderr:\n%s\nwant a failure and one line naming CAP_BPF and CAP_PERFMON", sub, err, stdout.String(), stderr.String())
		}
	}
}
