package tracer

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound"
	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
)

// KernelBTF is BTF given with --btf instead of, or besides, the running
// kernel's /sys/kernel/btf: the kernel's own (vmlinux) for a kernel built
// without it, and the RDMA modules' for modules that carry none (5.10,
// which has no module BTF; an ib_core built out of tree). The programs'
// CO-RE relocations read the structures' layouts from it. fentry, fexit
// and tp_btf need their target in the running kernel's BTF all the same:
// without it, a hook attaches as a kprobe or raw tracepoint.
type KernelBTF struct {
	// Base is the kernel's BTF, and BasePath where it came from; nil when
	// none was given: the running kernel's is the base.
	Base     *btf.Spec
	BasePath string
	// Modules are the modules' split BTF by module name, and where each
	// came from.
	Modules     map[string]*btf.Spec
	ModulePaths map[string]string
}

// maxBTFBytes bounds one BTF file: a distribution kernel's vmlinux BTF is
// 5 to 10 MB, a module's well under one.
const maxBTFBytes = 256 << 20

// LoadBTF reads --btf's paths. A file is the kernel's BTF when it stands
// alone, else a module's split BTF, named after the file (ib_core,
// ib_core.btf or ib_core.ko: ib_core). A directory is read as
// /sys/kernel/btf is laid out: vmlinux and a file per module. Raw BTF and
// ELF files with a .BTF section (vmlinux, a module's .ko) are read. Split
// BTF needs its kernel's: the one given, else the running kernel's.
func LoadBTF(paths []string) (*KernelBTF, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--btf %s: %w", quote(p), unwrapPath(err))
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("--btf %s: %w", quote(p), unwrapPath(err))
		}
		n := len(files)
		for _, e := range ents {
			if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("--btf %s: an empty directory: expected vmlinux and a file per module, as in /sys/kernel/btf", quote(p))
		}
	}
	k := &KernelBTF{Modules: map[string]*btf.Spec{}, ModulePaths: map[string]string{}}
	raws := map[string][]byte{}
	var split []string
	for _, f := range files {
		raw, err := readBTF(f)
		if err != nil {
			return nil, fmt.Errorf("--btf %s: %w", quote(f), err)
		}
		s, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
		if err != nil || moduleName(f) != "vmlinux" && !hasVmlinuxTypes(s) {
			// Not whole: a module's, read against its kernel's below.
			raws[f] = raw
			split = append(split, f)
			continue
		}
		if k.Base != nil {
			return nil, fmt.Errorf("--btf %s and %s: both are a kernel's BTF (vmlinux); give one", quote(k.BasePath), quote(f))
		}
		k.Base, k.BasePath = s, f
	}
	base, basePath := k.Base, k.BasePath
	if base == nil && len(split) > 0 {
		var err error
		if base, err = btf.LoadKernelSpec(); err != nil {
			return nil, fmt.Errorf("--btf %s: a module's BTF needs its kernel's: give it with --btf too (this kernel has none: %v)", quote(split[0]), err)
		}
		basePath = "/sys/kernel/btf/vmlinux"
	}
	for _, f := range split {
		s, err := btf.LoadSplitSpecFromReader(bytes.NewReader(raws[f]), base)
		if err != nil {
			return nil, fmt.Errorf("--btf %s: expected BTF: a kernel's (vmlinux), or a module's split on the kernel's BTF of %s (%v)", quote(f), quote(basePath), err)
		}
		name := moduleName(f)
		if prev, ok := k.ModulePaths[name]; ok {
			return nil, fmt.Errorf("--btf %s and %s: both are %s's BTF; give one", quote(prev), quote(f), name)
		}
		k.Modules[name], k.ModulePaths[name] = s, f
	}
	return k, nil
}

// hasVmlinuxTypes tells a kernel's BTF from a module's that happens to
// parse alone: the kernel's defines task_struct.
func hasVmlinuxTypes(s *btf.Spec) bool {
	var ts *btf.Struct
	return s.TypeByName("task_struct", &ts) == nil
}

// readBTF reads a file of raw BTF, or an ELF file's .BTF section.
func readBTF(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxBTFBytes+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if len(raw) > maxBTFBytes {
		return nil, fmt.Errorf("larger than %d MiB: not a BTF file", maxBTFBytes>>20)
	}
	if !bytes.HasPrefix(raw, []byte(elf.ELFMAG)) {
		// The magic 0xeb9f, in either byte order.
		if len(raw) < 4 || !(raw[0] == 0x9f && raw[1] == 0xeb) && !(raw[0] == 0xeb && raw[1] == 0x9f) {
			return nil, errors.New("not BTF: expected raw BTF (as in /sys/kernel/btf) or an ELF file with a .BTF section")
		}
		return raw, nil
	}
	// The section may be compressed: its size once decompressed is
	// bounded as the file's is, before anything is decompressed.
	ef, err := elfbound.Open(bytes.NewReader(raw), int64(len(raw)), elfbound.Limits{Section: maxBTFBytes, File: maxBTFBytes})
	if err != nil {
		return nil, fmt.Errorf("not an ELF file it can read: %v", err)
	}
	i := ef.Section(".BTF")
	if i < 0 {
		return nil, errors.New("an ELF file without a .BTF section: generate it with pahole -J (dwarves), from debug info")
	}
	return ef.Data(i)
}

// moduleName is the module a file's BTF is for, by its name: ib_core,
// ib_core.btf, ib_core.ko, ib-core.ko.debug: ib_core.
func moduleName(path string) string {
	n := filepath.Base(path)
	for _, ext := range []string{".debug", ".xz", ".ko", ".btf"} {
		n = strings.TrimSuffix(n, ext)
	}
	return strings.ReplaceAll(n, "-", "_")
}

// has says whether module's BTF was given.
func (k *KernelBTF) has(module string) bool {
	if k == nil {
		return false
	}
	_, ok := k.Modules[module]
	return ok
}

// programOptions are the CO-RE targets for the given BTF: its kernel's,
// else the running kernel's; its modules, and the running kernel's
// modules that it does not replace.
func (k *KernelBTF) programOptions(cache *btf.Cache) (ebpf.ProgramOptions, error) {
	if k == nil {
		return ebpf.ProgramOptions{}, nil
	}
	var o ebpf.ProgramOptions
	o.KernelTypes = k.Base
	if o.KernelTypes == nil {
		kernel, err := cache.Kernel()
		if err != nil {
			return o, fmt.Errorf("the kernel's BTF: %w", err)
		}
		o.KernelTypes = kernel
	}
	names := make([]string, 0, len(k.Modules))
	for n := range k.Modules {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		o.ExtraRelocationTargets = append(o.ExtraRelocationTargets, k.Modules[n])
	}
	running, _ := cache.Modules() // none: a kernel without module BTF
	for _, n := range running {
		if k.has(n) {
			continue
		}
		if s, err := cache.Module(n); err == nil {
			o.ExtraRelocationTargets = append(o.ExtraRelocationTargets, s)
		}
	}
	return o, nil
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func quote(path string) string { return termsafe.Sanitize(path) }
