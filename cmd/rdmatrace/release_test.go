package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The release's files (VERSION, deploy/) agree with each other and with
// the commands: a package or an image that names another version, a path
// the package does not install, or a flag the exporter does not know
// would ship broken.

const repoRoot = "../.."

func releaseVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(v) {
		t.Fatalf("VERSION is %q, want X.Y.Z", v)
	}
	return v
}

func TestManifestsRunTheImageOfVERSION(t *testing.T) {
	want := "ghcr.io/rdmatrace/rdmatrace:" + releaseVersion(t)
	files, err := filepath.Glob(filepath.Join(repoRoot, "deploy/kubernetes/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	image := regexp.MustCompile(`^\s*(?:-\s*)?image:\s*"?([^"\s]+)"?`)
	found := 0
	for _, f := range files {
		for i, line := range lines(t, f) {
			m := image.FindStringSubmatch(line)
			if m == nil || !strings.Contains(m[1], "rdmatrace") {
				continue
			}
			found++
			if m[1] != want {
				t.Errorf("%s:%d: image %s, want %s (VERSION)", filepath.Base(f), i+1, m[1], want)
			}
		}
	}
	if found == 0 {
		t.Errorf("no manifest in deploy/kubernetes runs an rdmatrace image")
	}
}

// nfpm.yaml installs what exists, and the systemd unit runs the binary
// and reads the environment file where the packages put them.
func TestPackagesInstallWhatTheServiceRuns(t *testing.T) {
	dst := map[string]bool{}
	var src, dstRe = regexp.MustCompile(`^\s*- src:\s*(\S+)`), regexp.MustCompile(`^\s*dst:\s*(\S+)`)
	for i, line := range lines(t, filepath.Join(repoRoot, "deploy/packaging/nfpm.yaml")) {
		if m := src.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], "out/") {
			if _, err := os.Stat(filepath.Join(repoRoot, m[1])); err != nil {
				t.Errorf("nfpm.yaml:%d: %v", i+1, err)
			}
		}
		if m := dstRe.FindStringSubmatch(line); m != nil {
			dst[m[1]] = true
		}
	}
	for _, f := range []string{"/usr/sbin/rdmatrace", "/etc/default/rdmatrace-exporter", "/usr/lib/systemd/system/rdmatrace-exporter.service"} {
		if !dst[f] {
			t.Errorf("nfpm.yaml installs no %s", f)
		}
	}
	unit := map[string]string{}
	for _, line := range lines(t, filepath.Join(repoRoot, "deploy/systemd/rdmatrace-exporter.service")) {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	exec := strings.Fields(unit["ExecStart"])
	if len(exec) < 2 || !dst[exec[0]] || exec[1] != "exporter" {
		t.Errorf("the unit's ExecStart=%s: want an installed rdmatrace's exporter", unit["ExecStart"])
	}
	if env := strings.TrimPrefix(unit["EnvironmentFile"], "-"); !dst[env] {
		t.Errorf("the unit's EnvironmentFile=%s is not installed by the packages", unit["EnvironmentFile"])
	}
}

// The default configuration's flags are the exporter's.
func TestDefaultExporterFlagsAreTheExportersFlags(t *testing.T) {
	known := map[string]bool{}
	for _, f := range exporterCommand().Flags {
		for _, n := range f.Names() {
			known[n] = true
		}
	}
	checked := 0
	for _, file := range []string{"deploy/packaging/rdmatrace-exporter.default", "deploy/systemd/rdmatrace-exporter.service"} {
		for i, line := range lines(t, filepath.Join(repoRoot, file)) {
			line = strings.TrimPrefix(strings.TrimSpace(line), "Environment=")
			v, ok := strings.CutPrefix(line, `RDMATRACE_EXPORTER_ARGS="`)
			if !ok {
				continue
			}
			checked++
			for _, w := range strings.Fields(strings.TrimSuffix(v, `"`)) {
				if name, isFlag := strings.CutPrefix(w, "--"); isFlag && !known[strings.SplitN(name, "=", 2)[0]] {
					t.Errorf("%s:%d: the exporter has no flag %s", file, i+1, w)
				}
			}
		}
	}
	if checked != 2 {
		t.Errorf("found RDMATRACE_EXPORTER_ARGS %d times, want in the default file and the unit", checked)
	}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
