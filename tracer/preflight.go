package tracer

import (
	"bufio"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Problem is something this system lacks that tracing needs, said in one
// line that tells what to do.
type Problem struct {
	// Fatal: no hook can attach without it, so there is no point trying.
	Fatal bool
	Msg   string
}

// Preflight looks at the system before anything is loaded: privileges,
// kernel and module BTF, the RDMA modules. Loading first would answer the
// same questions with a page of verifier and CO-RE errors per hook.
// BTF given with --btf stands in for the running kernel's.
func Preflight(given *KernelBTF) []Problem { return preflight(os.DirFS("/"), given) }

// Capability bits (linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

func preflight(root fs.FS, given *KernelBTF) []Problem {
	var ps []Problem
	if eff, ok := effectiveCaps(root); ok && eff&(1<<capSysAdmin) == 0 && (eff&(1<<capBPF) == 0 || eff&(1<<capPerfmon) == 0) {
		return []Problem{{Fatal: true, Msg: ErrPrivileges.Error()}}
	}
	exists := func(p string) bool { _, err := fs.Stat(root, p); return err == nil }
	if !exists("sys/kernel/btf/vmlinux") && (given == nil || given.Base == nil) {
		ps = append(ps, Problem{Fatal: true, Msg: "the kernel has no BTF (/sys/kernel/btf/vmlinux): rdmatrace needs a kernel built with CONFIG_DEBUG_INFO_BTF, as Debian's are, or the kernel's BTF given with --btf FILE"})
	}
	modules := exists("proc/modules")
	builtin := builtinModules(root)
	// A loaded module has a /sys/module directory with initstate, and
	// its own BTF; a built-in one is in modules.builtin (and has the
	// directory only if it has parameters) and its BTF is the kernel's.
	loaded := func(name string) bool { return builtin[name] || exists("sys/module/"+name) }
	noBTF := func(name string) bool {
		return exists("sys/module/"+name+"/initstate") && !exists("sys/kernel/btf/"+name) && !given.has(name)
	}
	const btfModules = "it needs a kernel built with CONFIG_DEBUG_INFO_BTF_MODULES, as Debian's are, or the module's BTF given with --btf (pahole -J makes it from the module built with debug info)"
	switch {
	case !loaded("ib_core") && !modules:
		// rdma_cm needs ib_core: one line says all.
		return append(ps, Problem{Fatal: true, Msg: "this kernel has no RDMA stack: ib_core is not built in, and the kernel cannot load modules"})
	case !loaded("ib_core"):
		return append(ps, Problem{Fatal: true, Msg: "the RDMA stack is not loaded (no ib_core): modprobe rdma_cm (it loads ib_core), or an RDMA driver such as mlx5_ib or rdma_rxe, then start rdmatrace again"})
	case noBTF("ib_core"):
		ps = append(ps, Problem{Fatal: true, Msg: "ib_core has no BTF (/sys/kernel/btf/ib_core), so no RDMA hook can be attached: " + btfModules})
	}
	switch {
	case !loaded("rdma_cm") && modules:
		ps = append(ps, Problem{Msg: "rdma_cm is not loaded: rdma_cm IDs and connections will not be traced; modprobe rdma_cm before starting rdmatrace"})
	case !loaded("rdma_cm"):
		ps = append(ps, Problem{Msg: "this kernel has no rdma_cm (not built in, and it cannot load modules): rdma_cm IDs and connections will not be traced"})
	case noBTF("rdma_cm"):
		ps = append(ps, Problem{Msg: "rdma_cm has no BTF (/sys/kernel/btf/rdma_cm): rdma_cm IDs and connections will not be traced; " + btfModules})
	}
	return ps
}

// effectiveCaps reads this process's effective capability set.
func effectiveCaps(root fs.FS) (uint64, bool) {
	f, err := root.Open("proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return caps, err == nil
		}
	}
	return 0, false
}

// builtinModules reads the running kernel's modules.builtin.
func builtinModules(root fs.FS) map[string]bool {
	rel, err := fs.ReadFile(root, "proc/sys/kernel/osrelease")
	if err != nil {
		return nil
	}
	f, err := root.Open("lib/modules/" + strings.TrimSpace(string(rel)) + "/modules.builtin")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() { // kernel/drivers/infiniband/core/ib_core.ko
		name := sc.Text()
		name = name[strings.LastIndexByte(name, '/')+1:]
		if n, ok := strings.CutSuffix(name, ".ko"); ok {
			m[strings.ReplaceAll(n, "-", "_")] = true
		}
	}
	return m
}
