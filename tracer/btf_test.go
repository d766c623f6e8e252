package tracer

import (
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
)

// gunzipTo writes testdata/btf/<kernel>/<name>.btf.gz, uncompressed, to
// dir/as.
func gunzipTo(t testing.TB, kernel, name, dir, as string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "btf", kernel, name+".btf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, as)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sysLike is a directory laid out as /sys/kernel/btf of Debian's 6.1:
// vmlinux, rdma_cm and smc.
func sysLike(t *testing.T) string {
	dir := t.TempDir()
	for _, n := range []string{"vmlinux", "rdma_cm", "smc"} {
		gunzipTo(t, "6.1", n, dir, n)
	}
	return dir
}

// TestBTFDirectoryIsReadAsSysKernelBTF: --btf DIR reads vmlinux as the
// kernel's BTF and each other file as the module it is named after.
func TestBTFDirectoryIsReadAsSysKernelBTF(t *testing.T) {
	dir := sysLike(t)
	k, err := LoadBTF([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if k.Base == nil || k.BasePath != filepath.Join(dir, "vmlinux") {
		t.Errorf("base %q, want vmlinux", k.BasePath)
	}
	if len(k.Modules) != 2 || !k.has("rdma_cm") || !k.has("smc") {
		t.Errorf("modules %v, want rdma_cm and smc", k.ModulePaths)
	}
	var cm *btf.Struct
	if err := k.Modules["rdma_cm"].TypeByName("rdma_id_private", &cm); err != nil {
		t.Errorf("rdma_cm's BTF lacks rdma_id_private: %v", err)
	}
	o, err := k.programOptions(btf.NewCache())
	if err != nil {
		t.Fatal(err)
	}
	if o.KernelTypes != k.Base || len(o.ExtraRelocationTargets) < 2 || o.ExtraRelocationTargets[0] != k.Modules["rdma_cm"] {
		t.Errorf("program options: kernel %p (want %p), %d extra targets", o.KernelTypes, k.Base, len(o.ExtraRelocationTargets))
	}
}

// TestBTFFilesAreToldApartByContent: repeated --btf FILE, in any order and
// named as pahole or a copy names them; the kernel's is the one that
// stands alone.
func TestBTFFilesAreToldApartByContent(t *testing.T) {
	dir := t.TempDir()
	cm := gunzipTo(t, "6.1", "rdma_cm", dir, "rdma_cm.btf")
	smc := gunzipTo(t, "6.1", "smc", dir, "smc.ko")
	vmlinux := gunzipTo(t, "6.1", "vmlinux", dir, "6.1.0-28-amd64.btf")
	k, err := LoadBTF([]string{cm, vmlinux, smc})
	if err != nil {
		t.Fatal(err)
	}
	if k.BasePath != vmlinux || k.ModulePaths["rdma_cm"] != cm || k.ModulePaths["smc"] != smc {
		t.Errorf("base %q, modules %v", k.BasePath, k.ModulePaths)
	}
}

// TestBTFOfThisKernelIsAccepted: a copy of this machine's vmlinux BTF.
func TestBTFOfThisKernelIsAccepted(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/btf/vmlinux")
	if err != nil {
		t.Skipf("this kernel has no BTF: %v", err)
	}
	path := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := LoadBTF([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if k.Base == nil || len(k.Modules) != 0 {
		t.Errorf("base %v, modules %v", k.Base, k.ModulePaths)
	}
}

// TestWrongBTFIsNamed: each wrong --btf says which path and what was
// expected.
func TestWrongBTFIsNamed(t *testing.T) {
	dir := sysLike(t)
	text := filepath.Join(t.TempDir(), "vmlinux")
	os.WriteFile(text, []byte("not BTF at all\n"), 0o644)
	empty := t.TempDir()
	self, _ := os.Executable() // an ELF file without .BTF
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{"/nonexistent/vmlinux"}, "--btf /nonexistent/vmlinux: no such file or directory"},
		{[]string{text}, "--btf " + text + ": not BTF: expected raw BTF (as in /sys/kernel/btf) or an ELF file with a .BTF section"},
		{[]string{empty}, "--btf " + empty + ": an empty directory"},
		{[]string{self}, "--btf " + self + ": an ELF file without a .BTF section: generate it with pahole -J"},
		{[]string{filepath.Join(dir, "vmlinux"), dir}, "both are a kernel's BTF (vmlinux); give one"},
		// A module's BTF read against another kernel's: its type ids and
		// strings do not continue that kernel's.
		{[]string{filepath.Join(dir, "rdma_cm"), gunzipTo(t, "6.1-arm64", "vmlinux", t.TempDir(), "vmlinux")},
			"--btf " + filepath.Join(dir, "rdma_cm") + ": expected BTF: a kernel's (vmlinux), or a module's split on the kernel's BTF of "},
	} {
		_, err := LoadBTF(c.paths)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--btf %v: error %v, want %q", c.paths, err, c.want)
		}
	}
}

// TestGivenBTFRelocatesTheFallbacks loads an rdma_cm kprobe program the
// way the tracer does. This machine has no RDMA, so without --btf its
// reads of rdma_cm's structures find no layout; with Debian 6.1's BTF
// given, they relocate and the verifier passes it.
func TestGivenBTFRelocatesTheFallbacks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root (CI runs as root)")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/kernel/btf/rdma_cm"); err == nil {
		t.Skip("this kernel has rdma_cm's BTF: the program would load without --btf")
	}
	const name = "raw_tp_cm_event_handler"
	load := func(k *KernelBTF) error {
		spec, err := bpf.LoadRdmatrace()
		if err != nil {
			t.Fatal(err)
		}
		if spec.Programs[name] == nil {
			t.Fatalf("no program %s in the object", name)
		}
		tr := &Tracer{spec: spec, cache: btf.NewCache()}
		if tr.progOpts, err = k.programOptions(tr.cache); err != nil {
			t.Fatal(err)
		}
		lp, err := tr.load(prog{name: name, kind: rawTP, target: "cm_event_handler"})
		if err == nil {
			lp.coll.Close()
		}
		return err
	}
	if err := load(nil); err == nil {
		t.Fatalf("%s loaded without rdma_cm's BTF: the test cannot tell --btf's effect", name)
	} else {
		t.Logf("without --btf: %s", loadReason(err))
	}
	k, err := LoadBTF([]string{sysLike(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := load(k); err != nil {
		t.Errorf("with --btf of Debian 6.1: %s", loadReason(err))
	}
}

// FuzzLoadBTF: whatever a --btf file holds, LoadBTF answers with BTF or
// an error naming the file, never a panic. Seeds: a module's BTF read as
// the kernel's, the kernel's cut short, an ELF header alone.
func FuzzLoadBTF(f *testing.F) {
	dir := f.TempDir()
	for _, n := range []string{"rdma_cm", "smc"} {
		b, err := os.ReadFile(gunzipTo(f, "6.1", n, dir, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte{0x9f, 0xeb, 1, 0})
	// A compressed .BTF section claiming 4 GiB (the stream holds 1 MiB).
	bomb := elftest.File{Type: elf.ET_REL, Sections: []elftest.Section{
		{Name: ".BTF", Type: elf.SHT_PROGBITS, Flags: elf.SHF_COMPRESSED, Data: elftest.Zeros(f, 1<<20), Claim: 4 << 30},
	}}.Write(f, dir, "bomb")
	if b, err := os.ReadFile(bomb); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "vmlinux")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadBTF([]string{path}); err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
