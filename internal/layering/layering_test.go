package layering

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rdmatrace/rdmatrace/"

// A group is a role in the pipeline (docs/design.md): the folders that
// hold it, by path below the module.
type group string

const (
	model     group = "model"     // internal/rdma: the vocabulary
	base      group = "base"      // internal/base: helpers that know no RDMA
	host      group = "host"      // internal/host: processes, cgroups, namespaces
	source    group = "source"    // what produces rdma values
	analysis  group = "analysis"  // internal/analysis: what reads them
	sink      group = "sink"      // formats, internal/fleet, internal/view: what writes them
	rdmabench group = "rdmabench" // internal/rdmabench: the benchmark's own
	command   group = "command"   // cmd/: flags and wiring
	tool      group = "tool"      // the BPF object and its generator
	tests     group = "tests"     // e2e, the layering test
)

// groupOf says which group a package of ours belongs to.
func groupOf(pkg string) group {
	switch {
	case pkg == "internal/rdma":
		return model
	case strings.HasPrefix(pkg, "internal/base/"):
		return base
	case strings.HasPrefix(pkg, "internal/host/"):
		return host
	case strings.HasPrefix(pkg, "internal/source/"), pkg == "tracer", pkg == "debugfs":
		return source
	case strings.HasPrefix(pkg, "internal/analysis/"):
		return analysis
	case pkg == "formats", strings.HasPrefix(pkg, "internal/fleet/"), strings.HasPrefix(pkg, "internal/view/"):
		return sink
	case strings.HasPrefix(pkg, "internal/rdmabench/"):
		return rdmabench
	case strings.HasPrefix(pkg, "cmd/"):
		return command
	case pkg == "bpf", strings.HasPrefix(pkg, "bpf/"):
		return tool
	case pkg == "e2e", pkg == "internal/layering":
		return tests
	}
	return ""
}

// may lists the groups each group may import besides its own. A source
// names owners with host/ and the tracer loads bpf/; analyses read sources
// but never write (no sink); formats renders model values and analyses'
// results; only rdmabench's command and its own packages import rdmabench.
var may = map[group][]group{
	model:     nil,
	base:      nil,
	host:      {model, base},
	source:    {model, host, base, tool},
	analysis:  {model, host, base, source},
	sink:      {model, base, analysis},
	rdmabench: {model, base, source, sink},
	command:   {model, base, host, source, analysis, sink, rdmabench},
	tool:      nil,
}

// Within a group, packages may import each other; these pairs may not.
var forbidden = []struct{ from, to, why string }{
	{"cmd/rdmatrace", "internal/rdmabench/", "rdmatrace does not ship the benchmark"},
	{"tracer", "internal/source/nldev", "the tracer decodes addresses with rdma.DecodeSockaddr, not the netlink client"},
}

// Packages of the kernel's interfaces that commands never import: they
// consume events and resources through the sources' own types.
var notInCommands = []string{"github.com/cilium/ebpf", "github.com/mdlayher/netlink"}

type pkgInfo struct {
	path    string
	imports []string
}

// listAll runs go list over the module and returns each package with its
// direct imports (of its non-test files: tests may reach across groups).
func listAll(t *testing.T) []pkgInfo {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var pkgs []pkgInfo
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs = append(pkgs, pkgInfo{strings.TrimPrefix(f[0], module), f[1:]})
	}
	return pkgs
}

// violations returns each import that breaks a rule, as "pkg imports dep: why".
func violations(pkgs []pkgInfo) []string {
	var bad []string
	for _, p := range pkgs {
		g := groupOf(p.path)
		if g == "" {
			bad = append(bad, fmt.Sprintf("%s is in no group: put it under internal/<role>/ or name its group in groupOf", p.path))
			continue
		}
		for _, imp := range p.imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				if g == command {
					for _, ext := range notInCommands {
						if imp == ext || strings.HasPrefix(imp, ext+"/") {
							bad = append(bad, fmt.Sprintf("%s (%s) imports %s: commands use the sources' types, not the kernel interface's", p.path, g, imp))
						}
					}
				}
				continue
			}
			for _, f := range forbidden {
				if strings.HasPrefix(p.path, f.from) && strings.HasPrefix(dep, f.to) {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s", p.path, dep, f.why))
				}
			}
			dg := groupOf(dep)
			if g == tests || dg == g || slices.Contains(may[g], dg) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): it may import only %v", p.path, g, dep, dg, may[g]))
		}
	}
	return bad
}

func TestGroupsImportOnlyWhatTheyMay(t *testing.T) {
	for _, v := range violations(listAll(t)) {
		t.Error(v)
	}
}

// The rules catch what they are for: a made-up package list with one
// violation of each kind.
func TestRulesFindViolations(t *testing.T) {
	got := violations([]pkgInfo{
		{"internal/analysis/ps", []string{module + "formats"}},
		{"internal/source/nldev", []string{module + "internal/analysis/filter"}},
		{"formats", []string{module + "internal/rdmabench/bench"}},
		{"cmd/rdmatrace", []string{"github.com/cilium/ebpf/ringbuf", module + "internal/rdmabench/tracerun"}},
		{"internal/rdma", []string{module + "internal/base/lines"}},
		{"stray", nil},
	})
	want := []string{
		"internal/analysis/ps (analysis) imports formats (sink)",
		"internal/source/nldev (source) imports internal/analysis/filter (analysis)",
		"formats (sink) imports internal/rdmabench/bench (rdmabench)",
		"cmd/rdmatrace (command) imports github.com/cilium/ebpf/ringbuf",
		"cmd/rdmatrace imports internal/rdmabench/tracerun: rdmatrace does not ship the benchmark",
		"internal/rdma (model) imports internal/base/lines (base)",
		"stray is in no group",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no violation starting %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
