package layering

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rdmatrace/rdmatrace/"

// goList runs go list -f format over pkg (a path below the module) and
// returns its lines.
func goList(t *testing.T, format, pkg string, deps bool) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	args := []string{"list", "-f", format}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command(goBin, append(args, module+pkg)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// ours lists the module's packages among paths, without the module prefix.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestPackagesDependOnlyOnWhatTheyMay holds the layering of DESIGN: the
// vocabulary (rdma/) needs nothing of ours; the renderers (formats/) read
// rdma/ values only, not the readers that produce them (debugfs/,
// kernlog/); the tracer decodes addresses with rdma/, not the netlink
// client; the shared helpers of internal/ stand alone.
func TestPackagesDependOnlyOnWhatTheyMay(t *testing.T) {
	for _, rule := range []struct {
		pkg   string
		allow []string // of ours, besides pkg itself
	}{
		{"rdma", nil},
		// bench/ is the verbs benchmarks' vocabulary, plain values as rdma/;
		// correlate/ joins them with events into outliers and phases, which
		// formats renders.
		{"formats", []string{"rdma", "bench", "correlate", "ports", "ps", "nldev", "smcnl", "sockdiag", "internal/termsafe"}}, // ports and ps: their rows
		{"correlate", []string{"rdma", "bench"}},
		{"internal/termsafe", nil},
		{"internal/lineerr", []string{"internal/termsafe"}},
		{"internal/lines", []string{"internal/lineerr", "internal/termsafe"}},
		{"internal/golden", nil},
		{"internal/safefile", nil},
		{"internal/rotate", []string{"internal/safefile"}},
	} {
		for _, dep := range ours(goList(t, "{{.ImportPath}}", rule.pkg, true)) {
			if dep != rule.pkg && !slices.Contains(rule.allow, dep) {
				t.Errorf("%s depends on %s; it may depend on %v only", rule.pkg, dep, rule.allow)
			}
		}
	}
}

func TestPackagesDoNotReachPastTheirSeams(t *testing.T) {
	for _, rule := range []struct {
		pkg, forbidden, why string
		deps                bool
	}{
		{"tracer", module + "nldev", "the tracer decodes addresses with rdma.DecodeSockaddr", true},
		{"formats", module + "debugfs", "renderers take rdma/ values", true},
		{"formats", module + "kernlog", "renderers take rdma/ values (rdma.KernelReport)", true},
		{"cmd/rdmatrace", "github.com/cilium/ebpf/ringbuf", "commands consume events through tracer.Run", false},
	} {
		reached := goList(t, "{{join .Imports \" \"}}", rule.pkg, false)
		if rule.deps {
			reached = goList(t, "{{.ImportPath}}", rule.pkg, true)
		}
		if slices.Contains(reached, rule.forbidden) {
			t.Errorf("%s reaches %s: %s", rule.pkg, rule.forbidden, rule.why)
		}
	}
}
