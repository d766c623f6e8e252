package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// trace -l runs without root and lists what this kernel has (failed
// before: -l was an unknown flag).
func TestTraceListRunsAsNobody(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("no kernel BTF here")
	}
	setpriv, bin, _ := asNobody(t)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "trace", "-l", "__inet_bind")
	cmd.Env = append(os.Environ(), "RDMATRACE_AS_MAIN=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !regexp.MustCompile(`(?m)^__inet_bind +fexit +fexit:__inet_bind +yes +in vmlinux$`).MatchString(stdout.String()) {
		t.Errorf("trace -l __inet_bind as nobody: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}
