package tracer

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
)

func loadGzBTF(t *testing.T, path string, base *btf.Spec) *btf.Spec {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var s *btf.Spec
	if base == nil {
		s, err = btf.LoadSpecFromReader(readerAt(t, z))
	} else {
		s, err = btf.LoadSplitSpecFromReader(readerAt(t, z), base)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// TestFallbackProgramsPassTheHostVerifier loads the kprobe and raw_tp
// programs into this machine's kernel, which has no RDMA: their CO-RE
// relocations are resolved against Debian 6.1's BTF (vmlinux, rdma_cm, smc
// and rdma_rxe, kept in testdata/btf), and the kernel's verifier checks them. The
// fentry/fexit/tp_btf programs need their RDMA target functions in the
// running kernel to load at all; the guest tests load and attach them.
func TestFallbackProgramsPassTheHostVerifier(t *testing.T) {
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		t.Fatal(err)
	}
	verifyFallbacks(t, spec, "../testdata/btf/6.1")
}

// TestArm64FallbackProgramsPassTheHostVerifier does the same with the
// object bpf2go built for arm64, relocated against Debian 6.1's arm64 BTF.
// The verifier is this x86 host's: it is the same code on arm64, what
// differs there is the JIT, which only an arm64 kernel runs, and struct
// pt_regs, whose arm64 layout the kprobe programs read within bounds here.
func TestArm64FallbackProgramsPassTheHostVerifier(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../bpf/rdmatrace_arm64_bpfel.o")
	if err != nil {
		t.Fatal(err)
	}
	verifyFallbacks(t, spec, "../testdata/btf/6.1-arm64")
}

func verifyFallbacks(t *testing.T, spec *ebpf.CollectionSpec, btfDir string) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	base := loadGzBTF(t, btfDir+"/vmlinux.btf.gz", nil)
	types := loadGzBTF(t, btfDir+"/rdma_cm.btf.gz", base)
	smc := loadGzBTF(t, btfDir+"/smc.btf.gz", base)
	rxe := loadGzBTF(t, btfDir+"/rdma_rxe.btf.gz", base)
	// The fallbacks are every kprobe/kretprobe and raw_tp program in the
	// object; each must load, and the hook table's fallbacks (what the
	// tracer attaches without BTF targets) must be among them.
	want := map[string]bool{}
	for name, ps := range spec.Programs {
		if ps.Type == ebpf.Kprobe || ps.Type == ebpf.RawTracepoint {
			want[name] = true
		}
	}
	for _, h := range Hooks {
		for _, v := range h.variants {
			for _, p := range v.progs {
				if p.kind != tracing && !want[p.name] {
					t.Errorf("hook %s, variant %s: fallback program %s is not a kprobe or raw_tp program of the object", h.Name, v.name, p.name)
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("no kprobe or raw_tp program in the object")
	}
	loaded := 0
	for name := range want {
		ps := spec.Programs[name]
		sub := &ebpf.CollectionSpec{Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{name: ps}, Variables: spec.Variables, Types: spec.Types}
		coll, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: base, ExtraRelocationTargets: []*btf.Spec{types, smc, rxe}}})
		if err != nil {
			var ve *ebpf.VerifierError
			if errors.As(err, &ve) {
				t.Errorf("%s: rejected by the verifier:\n%+v", name, ve)
			} else {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		coll.Close()
		loaded++
	}
	if loaded != len(want) {
		t.Errorf("%d of the object's %d kprobe/raw_tp programs loaded, want all", loaded, len(want))
	}
	t.Logf("%d kprobe and raw_tp programs passed the host kernel's verifier", loaded)
}

func readerAt(t *testing.T, z *gzip.Reader) *bytesReaderAt {
	t.Helper()
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return &bytesReaderAt{bytes.NewReader(b)}
}

type bytesReaderAt struct{ *bytes.Reader }
