package main

import (
	"os/exec"
	"strings"
	"testing"
)

// rdmatrace must stay a static CGO_ENABLED=0 binary; rdmabench's cgo
// (verbs/) must never reach it. `make build` also checks the binary itself.
func TestRdmatraceImportsNoCgoPackageOfOurs(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}} {{len .CgoFiles}}{{end}}`, ".")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1") // see cgo files even where the build would drop them
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[1] != "0" {
			t.Errorf("rdmatrace imports %s, which uses cgo", f[0])
		}
	}
}
