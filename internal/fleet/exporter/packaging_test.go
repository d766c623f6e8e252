package exporter

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runScript runs a package script of deploy/packaging with args, with
// fake systemctl and deb-systemd-* that log their calls (the ones named
// in tools, the others absent), in a mount namespace of its own where
// /run/systemd/system exists when systemd is true: what the script asked
// systemd to do, a call a line.
func runScript(t *testing.T, script string, systemd bool, tools []string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("no unshare (util-linux): the package scripts are tested in a mount namespace of their own")
	}
	dir := t.TempDir()
	bin, log := filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
	os.Mkdir(bin, 0o755)
	for _, tool := range tools {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\necho \""+tool+" $*\" >>"+log+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path, err := filepath.Abs(filepath.Join("../../../deploy/packaging", script))
	if err != nil {
		t.Fatal(err)
	}
	setup := "mount -t tmpfs none /run"
	if systemd {
		setup += " && mkdir -p /run/systemd/system"
	}
	// The fake tools, and what the setup and sh need: no other systemctl
	// or deb-systemd-* is found.
	for _, tool := range []string{"sh", "mount", "mkdir"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if !contains(tools, tool) {
			if err := os.Symlink(real, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", setup + ` && exec sh "$0" "$@"`, path}, args...)...)
	cmd.Env = []string{"PATH=" + bin}
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "Operation not permitted") || strings.Contains(string(out), "unshare failed") {
			t.Fatalf("unshare -m: %s (the test needs root, as CI and the package smoke have)", out)
		}
		t.Fatalf("%s %v: %v\n%s", script, args, err, out)
	}
	b, _ := os.ReadFile(log)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// The packages' scripts, as dpkg and rpm call them, with systemd running
// and not: a removal stops and disables the exporter, an upgrade restarts
// it if it runs, an install starts nothing.
func TestPackageScriptsStopAtRemovalAndRestartAtUpgrade(t *testing.T) {
	deb := []string{"systemctl", "deb-systemd-invoke", "deb-systemd-helper"}
	rpm := []string{"systemctl"}
	const unit = "rdmatrace-exporter.service"
	for _, c := range []struct {
		what    string
		script  string
		systemd bool
		tools   []string
		args    []string
		want    []string
	}{
		{"deb install", "postinstall.sh", true, deb, []string{"configure", ""}, []string{"systemctl daemon-reload"}},
		{"deb upgrade", "postinstall.sh", true, deb, []string{"configure", "0.9.0"}, []string{"systemctl daemon-reload", "deb-systemd-invoke try-restart " + unit}},
		{"deb upgrade, old prerm", "preremove.sh", true, deb, []string{"upgrade", "1.0.0"}, []string{""}},
		// systemctl disable removes an admin's systemctl enable links,
		// which deb-systemd-helper does not know of; it then forgets its own.
		{"deb remove", "preremove.sh", true, deb, []string{"remove"}, []string{"deb-systemd-invoke stop " + unit, "systemctl --no-reload disable " + unit, "deb-systemd-helper disable " + unit}},
		{"deb remove, no systemd", "preremove.sh", false, deb, []string{"remove"}, []string{"systemctl --no-reload disable " + unit, "deb-systemd-helper disable " + unit}},
		{"deb remove, postrm", "postremove.sh", true, deb, []string{"remove"}, []string{"systemctl daemon-reload"}},
		{"deb purge, no systemd", "postremove.sh", false, deb, []string{"purge"}, []string{"deb-systemd-helper purge " + unit}},
		{"rpm install", "postinstall.sh", true, rpm, []string{"1"}, []string{"systemctl daemon-reload"}},
		{"rpm upgrade", "postinstall.sh", true, rpm, []string{"2"}, []string{"systemctl daemon-reload", "systemctl try-restart " + unit}},
		{"rpm upgrade, old preun", "preremove.sh", true, rpm, []string{"1"}, []string{""}},
		{"rpm erase", "preremove.sh", true, rpm, []string{"0"}, []string{"systemctl stop " + unit, "systemctl --no-reload disable " + unit}},
		{"rpm erase, no systemd", "preremove.sh", false, rpm, []string{"0"}, []string{"systemctl --no-reload disable " + unit}},
		{"rpm erase, no systemd, no systemctl", "preremove.sh", false, nil, []string{"0"}, []string{""}},
		{"deb install, no systemd", "postinstall.sh", false, deb, []string{"configure", ""}, []string{""}},
	} {
		got := runScript(t, c.script, c.systemd, c.tools, c.args...)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s (%s %v): calls %q, want %q", c.what, c.script, c.args, got, c.want)
		}
	}
}
