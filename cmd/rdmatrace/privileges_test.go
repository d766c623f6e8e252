package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each command that needs the tracer tells a user without the privileges
// in one line that it, by its own name, needs root, what for, and how to
// get it; not to "run rdmatrace trace as root". (The exporter serves
// without the tracer and says it once: exporter_test.go.)
func TestEachCommandSaysItNeedsRootByItsName(t *testing.T) {
	setpriv, bin, dir := asNobody(t)
	// The recording goes in a directory the user nobody may write to.
	w := filepath.Join(dir, "w")
	if err := os.Mkdir(w, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(w, 0o777)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--duration", "1s"}, "rdmatrace: trace: needs root: "},
		{[]string{"trace", "-w", filepath.Join(w, "rec.ndjson"), "--duration", "1s"}, "rdmatrace: trace: needs root: "},
		{[]string{"leaks", "--", "true"}, "rdmatrace: leaks: needs root: "},
	} {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin}, c.args...)...)
		cmd.Dir = "/"
		cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		line := strings.TrimSuffix(stderr.String(), "\n")
		if err == nil || stdout.Len() > 0 || strings.Contains(line, "\n") || !strings.HasPrefix(line, c.want) ||
			!strings.Contains(line, "CAP_BPF and CAP_PERFMON") || !strings.Contains(line, "run it with sudo") || strings.Contains(line, "rdmatrace trace as root") {
			t.Errorf("rdmatrace %s as nobody: %v, stdout %q, stderr:\n%s\nwant a failure and one line: %s...CAP_BPF and CAP_PERFMON...run it with sudo",
				strings.Join(c.args, " "), err, stdout.String(), stderr.String(), c.want)
		}
	}
}
