package tracer

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// Listed is one way of attaching a hook, as `rdmatrace trace -l` lists it
// (bpftrace -l lists probes): where it attaches and whether this kernel
// has that place.
type Listed struct {
	Hook    string
	Variant string   // "fexit", "kprobe+kretprobe", "tp_btf", ...
	Probes  []string // bpftrace's spelling: fexit:rdma_restrack_add, kretprobe:..., tracepoint:rdma_cma:cm_send_req
	// Present: every probe's target is in this kernel. Where says in
	// which BTF (vmlinux or a module) or kallsyms it was found; Why says
	// what is missing, or what could not be checked (then Unknown).
	Present bool
	Unknown bool
	Where   string
	Why     string
	// Module: the hook is attached only when this module is loaded.
	Module string
	// Followed: attached only with --follow-pid.
	Followed bool
}

// Here is the listed variant's verdict: yes, no or ? (could not tell).
func (l *Listed) Here() string {
	switch {
	case l.Present:
		return "yes"
	case l.Unknown:
		return "?"
	}
	return "no"
}

// Note is where the variant's targets were found, or why not, and when
// the hook is attached at all.
func (l *Listed) Note() string {
	var n []string
	if l.Where != "" {
		n = append(n, "in "+l.Where)
	}
	if l.Why != "" {
		n = append(n, l.Why)
	}
	if l.Followed {
		n = append(n, "with --follow-pid only")
	}
	return strings.Join(n, "; ")
}

// listModules are the modules whose BTF the listing looks in, besides
// vmlinux: RDMA's core modules and SMC's. A function of a module that is
// not loaded cannot be checked.
var listModules = append(rdmaModules, "smc")

// rdmaModules are those a hook without a module of its own may be in.
var rdmaModules = []string{"ib_core", "ib_uverbs", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"}

// kernelView answers the listing's questions about the running kernel.
type kernelView interface {
	// btfHas says in which BTF (vmlinux or a module) a type called name
	// of kind fn (a function) or tracepoint (btf_trace_NAME) is.
	btfHas(name string, tracepoint bool) (where string, ok bool)
	// kallsyms says in which module (or vmlinux) function name is.
	kallsyms(name string) (where string, ok bool)
	kprobes() bool
	// missing are the modules of rdmaModules that are not loaded.
	missing() []string
	loaded(module string) bool
}

// List lists the hooks (every variant of each, in order of preference)
// whose name or one of whose probes matches the glob pattern ("" for
// all), with whether this kernel has their targets. It needs no
// privileges: BTF and kallsyms' names are readable by every user. The
// second result says what could not be checked.
func List(pattern string) ([]Listed, []string, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		return nil, nil, err
	}
	k := newHostView()
	ls := list(spec, k, pattern)
	return ls, k.notes(), nil
}

func list(spec *ebpf.CollectionSpec, k kernelView, pattern string) []Listed {
	var out []Listed
	for _, h := range Hooks {
		for _, v := range h.variants {
			l := Listed{Hook: h.Name, Variant: v.name, Module: h.module, Followed: h.followed, Present: true}
			var where, why []string
			seen := map[string]bool{}
			for _, p := range v.progs {
				probe, target, tp := probeOf(spec, p)
				l.Probes = append(l.Probes, probe)
				if seen[target+probe[:strings.IndexByte(probe, ':')]] {
					continue
				}
				seen[target+probe[:strings.IndexByte(probe, ':')]] = true
				w, ok, unknown, reason := present(k, h, p, target, tp)
				switch {
				case unknown:
					l.Unknown = true
					why = appendNew(why, reason)
				case !ok:
					l.Present = false
					why = appendNew(why, reason)
				default:
					where = appendNew(where, w)
				}
			}
			if l.Unknown {
				l.Present = false
			}
			l.Where, l.Why = strings.Join(where, ", "), strings.Join(why, "; ")
			if matches(pattern, &l) {
				out = append(out, l)
			}
		}
	}
	return out
}

func appendNew(s []string, x string) []string {
	for _, y := range s {
		if y == x {
			return s
		}
	}
	return append(s, x)
}

// matches says whether the glob pattern matches the hook's name or one
// of its probes ("" matches all).
func matches(pattern string, l *Listed) bool {
	if pattern == "" {
		return true
	}
	for _, s := range append([]string{l.Hook, l.Variant}, l.Probes...) {
		if ok, _ := path.Match(pattern, s); ok {
			return true
		}
	}
	return false
}

// probeOf names where p attaches, in bpftrace's words, with its target
// (function or tracepoint) and whether that is a tracepoint.
func probeOf(spec *ebpf.CollectionSpec, p prog) (probe, target string, tracepoint bool) {
	switch p.kind {
	case kprobe:
		return "kprobe:" + p.target, p.target, false
	case kretprobe:
		return "kretprobe:" + p.target, p.target, false
	case rawTP:
		return "rawtracepoint:" + p.target, p.target, true
	}
	kind, target := "fentry", p.target
	if ps, ok := spec.Programs[p.name]; ok {
		kind, _, _ = strings.Cut(ps.SectionName, "/")
		if target == "" {
			target = ps.AttachTo
		}
	}
	return kind + ":" + target, target, kind == "tp_btf"
}

// present says whether this kernel has target, where, and why not; unknown
// when it could not be told.
func present(k kernelView, h Hook, p prog, target string, tp bool) (where string, ok, unknown bool, why string) {
	if h.module != "" && !k.loaded(h.module) {
		return "", false, true, "module " + h.module + " not loaded: cannot check"
	}
	if p.kind == kprobe || p.kind == kretprobe {
		if !k.kprobes() {
			return "", false, false, "this kernel has no kprobes"
		}
		if w, ok := k.kallsyms(target); ok {
			return w, true, false, ""
		}
		return absent(k, target, "kallsyms")
	}
	if w, ok := k.btfHas(target, tp); ok {
		return w, true, false, ""
	}
	return absent(k, target, "BTF")
}

// absent says target was not found; unknown when a module it may be in is
// not loaded.
func absent(k kernelView, target, in string) (string, bool, bool, string) {
	if m := k.missing(); len(m) > 0 {
		return "", false, true, "not in " + in + " of vmlinux or a loaded module (" + strings.Join(m, ", ") + " not loaded)"
	}
	return "", false, false, "not in this kernel's " + in
}

// hostView is the running kernel, read as any user can: /sys/kernel/btf,
// /proc/kallsyms, /sys/module.
type hostView struct {
	root    fs.FS
	builtin map[string]bool
	cache   *btf.Cache
	specs   map[string]*btf.Spec // vmlinux and loaded modules, read once
	order   []string
	syms    map[string]string
	symsErr error
	errs    []string
	loadErr bool
}

func newHostView() *hostView {
	root := os.DirFS("/")
	return &hostView{root: root, builtin: builtinModules(root), cache: btf.NewCache()}
}

// loaded: a loaded module has /sys/module/NAME; a built-in one is in
// modules.builtin (its functions are vmlinux's).
func (h *hostView) loaded(m string) bool {
	_, err := fs.Stat(h.root, "sys/module/"+m)
	return err == nil || h.builtin[m]
}

func (h *hostView) kprobes() bool { return haveKprobes(h.root) }

func (h *hostView) missing() []string {
	var out []string
	for _, m := range rdmaModules {
		if !h.loaded(m) {
			out = append(out, m)
		}
	}
	return out
}

func (h *hostView) load() {
	if h.specs != nil || h.loadErr {
		return
	}
	k, err := h.cache.Kernel()
	if err != nil {
		h.loadErr = true
		h.errs = append(h.errs, "no kernel BTF (/sys/kernel/btf/vmlinux): fentry, fexit and tp_btf targets not checked ("+err.Error()+")")
		return
	}
	h.specs = map[string]*btf.Spec{"vmlinux": k}
	h.order = []string{"vmlinux"}
	for _, m := range listModules {
		s, err := h.cache.Module(m)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not loaded, or built in (its types are vmlinux's)
		}
		if err != nil {
			h.errs = append(h.errs, "BTF of "+m+": "+err.Error())
			continue
		}
		h.specs[m] = s
		h.order = append(h.order, m)
	}
}

func (h *hostView) btfHas(name string, tracepoint bool) (string, bool) {
	h.load()
	if tracepoint {
		name = "btf_trace_" + name
	}
	for _, where := range h.order {
		types, err := h.specs[where].AnyTypesByName(name)
		if err != nil {
			continue
		}
		for _, t := range types {
			switch t.(type) {
			case *btf.Func:
				if !tracepoint {
					return where, true
				}
			case *btf.Typedef:
				if tracepoint {
					return where, true
				}
			}
		}
	}
	return "", false
}

func (h *hostView) kallsyms(name string) (string, bool) {
	if h.syms == nil && h.symsErr == nil {
		h.syms, h.symsErr = readKallsyms(h.root)
		if h.symsErr != nil {
			h.errs = append(h.errs, "kprobe targets not checked: "+h.symsErr.Error())
		}
	}
	w, ok := h.syms[name]
	return w, ok
}

// readKallsyms maps the kernel's function names to their module
// ("vmlinux" for the kernel's own). Names are shown to every user; only
// the addresses are hidden.
func readKallsyms(root fs.FS) (map[string]string, error) {
	f, err := root.Open("proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ffffffffc0a01000 t rdma_restrack_add	[ib_core]
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T") {
			continue
		}
		where := "vmlinux"
		if len(fields) > 3 {
			where = strings.Trim(fields[3], "[]")
		}
		if _, seen := syms[fields[2]]; !seen {
			syms[fields[2]] = where
		}
	}
	return syms, sc.Err()
}

// notes says once what the listing could not check: modules not loaded,
// BTF or kallsyms that could not be read.
func (h *hostView) notes() []string {
	out := append([]string{}, h.errs...)
	if m := h.missing(); len(m) > 0 {
		out = append(out, "not loaded, so not checked: "+strings.Join(m, ", ")+" (a hook in them shows as unknown; modprobe them to check)")
	}
	return out
}
