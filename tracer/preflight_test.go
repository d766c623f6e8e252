package tracer

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cilium/ebpf/btf"
)

func TestPreflightSaysWhatIsMissingInOneLineEach(t *testing.T) {
	file := &fstest.MapFile{}
	caps := func(eff string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t" + eff + "\n")}
	}
	rdma := fstest.MapFS{ // Debian: ib_core and rdma_cm loaded as modules, with BTF
		"proc/self/status":             caps("000001ffffffffff"),
		"proc/modules":                 file,
		"sys/kernel/btf/vmlinux":       file,
		"sys/kernel/btf/ib_core":       file,
		"sys/kernel/btf/rdma_cm":       file,
		"sys/module/ib_core/initstate": file,
		"sys/module/rdma_cm/initstate": file,
	}
	with := func(change func(fstest.MapFS)) fstest.MapFS {
		fs := fstest.MapFS{}
		for k, v := range rdma {
			fs[k] = v
		}
		change(fs)
		return fs
	}
	for _, tc := range []struct {
		name  string
		fs    fstest.MapFS
		given *KernelBTF // --btf
		fatal bool
		want  []string // one problem each, in order
	}{
		{"a Debian kernel with RDMA loaded", rdma, nil, false, nil},
		{"ib_core and rdma_cm built in", with(func(fs fstest.MapFS) {
			delete(fs, "sys/module/ib_core/initstate")
			delete(fs, "sys/module/rdma_cm/initstate")
			delete(fs, "sys/kernel/btf/ib_core")
			delete(fs, "sys/kernel/btf/rdma_cm")
			fs["sys/module/ib_core/parameters/recv_queue_size"] = file
			fs["proc/sys/kernel/osrelease"] = &fstest.MapFile{Data: []byte("6.12.0-1-amd64\n")}
			fs["lib/modules/6.12.0-1-amd64/modules.builtin"] = &fstest.MapFile{Data: []byte(
				"kernel/drivers/infiniband/core/ib_core.ko\nkernel/drivers/infiniband/core/rdma_cm.ko\n")}
		}), nil, false, nil},
		{"no privileges", with(func(fs fstest.MapFS) { fs["proc/self/status"] = caps("0000000000000000") }), nil, true,
			[]string{"needs CAP_BPF and CAP_PERFMON"}},
		{"CAP_BPF without CAP_PERFMON", with(func(fs fstest.MapFS) { fs["proc/self/status"] = caps("0000008000000000") }), nil, true,
			[]string{"needs CAP_BPF and CAP_PERFMON"}},
		{"CAP_BPF and CAP_PERFMON", with(func(fs fstest.MapFS) { fs["proc/self/status"] = caps("000000c000000000") }), nil, false, nil},
		{"no RDMA modules loaded", with(func(fs fstest.MapFS) {
			for k := range fs {
				if strings.HasPrefix(k, "sys/module/") {
					delete(fs, k)
				}
			}
		}), nil, true, []string{"the RDMA stack is not loaded (no ib_core): modprobe rdma_cm"}},
		{"no module support and no RDMA (this host)", fstest.MapFS{
			"proc/self/status":       caps("000001ffffffffff"),
			"sys/kernel/btf/vmlinux": file,
		}, nil, true, []string{"this kernel has no RDMA stack: ib_core is not built in, and the kernel cannot load modules"}},
		{"ib_core without BTF", with(func(fs fstest.MapFS) { delete(fs, "sys/kernel/btf/ib_core") }), nil, true,
			[]string{"ib_core has no BTF (/sys/kernel/btf/ib_core)"}},
		{"rdma_cm not loaded", with(func(fs fstest.MapFS) { delete(fs, "sys/module/rdma_cm/initstate") }), nil, false,
			[]string{"rdma_cm is not loaded: rdma_cm IDs and connections will not be traced; modprobe rdma_cm"}},
		{"rdma_cm without BTF", with(func(fs fstest.MapFS) { delete(fs, "sys/kernel/btf/rdma_cm") }), nil, false,
			[]string{"rdma_cm has no BTF (/sys/kernel/btf/rdma_cm)"}},
		{"no kernel BTF", with(func(fs fstest.MapFS) { delete(fs, "sys/kernel/btf/vmlinux") }), nil, true,
			[]string{"the kernel has no BTF"}},
		// 5.10: no module BTF, given with --btf; a kernel without BTF
		// given its own.
		{"ib_core and rdma_cm without BTF, given with --btf", with(func(fs fstest.MapFS) {
			delete(fs, "sys/kernel/btf/ib_core")
			delete(fs, "sys/kernel/btf/rdma_cm")
		}), &KernelBTF{Modules: map[string]*btf.Spec{"ib_core": nil, "rdma_cm": nil}}, false, nil},
		{"rdma_cm given, ib_core not", with(func(fs fstest.MapFS) {
			delete(fs, "sys/kernel/btf/ib_core")
			delete(fs, "sys/kernel/btf/rdma_cm")
		}), &KernelBTF{Modules: map[string]*btf.Spec{"rdma_cm": nil}}, true, []string{"ib_core has no BTF (/sys/kernel/btf/ib_core), so no RDMA hook can be attached: it needs a kernel built with CONFIG_DEBUG_INFO_BTF_MODULES, as Debian's are, or the module's BTF given with --btf"}},
		{"no kernel BTF, given with --btf", with(func(fs fstest.MapFS) { delete(fs, "sys/kernel/btf/vmlinux") }),
			&KernelBTF{Base: &btf.Spec{}}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := preflight(tc.fs, tc.given)
			fatal := false
			for _, p := range ps {
				fatal = fatal || p.Fatal
				if strings.Contains(p.Msg, "\n") {
					t.Errorf("a problem of more than one line: %q", p.Msg)
				}
			}
			if fatal != tc.fatal || len(ps) != len(tc.want) {
				t.Fatalf("preflight = %+v; want %d problems, fatal %v: %q", ps, len(tc.want), tc.fatal, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(ps[i].Msg, w) {
					t.Errorf("problem %d: %q, want %q", i, ps[i].Msg, w)
				}
			}
		})
	}
}
