package tracer

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// TestEveryHookProgramIsInTheObject holds the Go side of the hook table to
// the compiled object: every program a hook names is there, of the type
// its attach kind needs, and every program in the object serves a hook (a
// renamed C function would otherwise only show as a skipped hook at run
// time, on the kernel that lacks the other variants). It fails if a
// program's name in hooks.go is misspelled: tried by renaming one.
func TestEveryHookProgramIsInTheObject(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	want := map[attachKind]ebpf.ProgramType{tracing: ebpf.Tracing, kprobe: ebpf.Kprobe, kretprobe: ebpf.Kprobe, rawTP: ebpf.RawTracepoint}
	used := map[string]bool{}
	for _, h := range Hooks {
		for _, v := range h.variants {
			for _, p := range v.progs {
				used[p.name] = true
				ps, ok := spec.Programs[p.name]
				if !ok {
					t.Errorf("hook %s, variant %s: no program %s in the object", h.Name, v.name, p.name)
					continue
				}
				if ps.Type != want[p.kind] {
					t.Errorf("hook %s, variant %s: program %s is %v, its attach kind needs %v", h.Name, v.name, p.name, ps.Type, want[p.kind])
				}
				if p.kind != tracing && p.target == "" {
					t.Errorf("hook %s, variant %s: program %s has no target", h.Name, v.name, p.name)
				}
			}
		}
	}
	for name := range spec.Programs {
		if !used[name] && !strings.HasPrefix(name, "selftest_") { // sidemap_test's own programs
			t.Errorf("program %s in the object serves no hook", name)
		}
	}
}
