package tracer

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"debug/elf"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
)

// btfELF writes an ELF file whose .BTF section is compressed: data the
// zlib stream, claim the size it says it decompresses to.
func btfELF(t *testing.T, data []byte, claim uint64) string {
	t.Helper()
	return elftest.File{Type: elf.ET_REL, Sections: []elftest.Section{
		{Name: ".BTF", Type: elf.SHT_PROGBITS, Flags: elf.SHF_COMPRESSED, Data: data, Claim: claim},
	}}.Write(t, t.TempDir(), "vmlinux")
}

// A 650 KB ELF file whose .BTF decompresses to 512 MiB is refused by the
// size its section claims, in little memory; the file's own bound (256
// MiB) held, the section's did not (a 3 MB file reached 4 GiB).
func TestACompressedBTFSectionIsBoundedAsTheFileIs(t *testing.T) {
	const claim = 512 << 20
	p := btfELF(t, elftest.Zeros(t, claim), claim)
	var err error
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	_, err = LoadBTF([]string{p})
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 64<<20 {
		t.Errorf("refusing it allocated %d MiB", n>>20)
	}
	if err == nil || !strings.Contains(err.Error(), "section .BTF, decompressed: 512 MiB, over the bound of 256 MiB") || !strings.Contains(err.Error(), p) {
		t.Errorf("LoadBTF: %v, want the section's size refused, naming the file", err)
	}
}

// A compressed .BTF section within the bound is read: Debian 6.1's
// kernel BTF, zlib-compressed in a vmlinux-like file.
func TestACompressedBTFSectionIsRead(t *testing.T) {
	f, err := os.Open("../testdata/btf/6.1/vmlinux.btf.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	w := zlib.NewWriter(&c)
	w.Write(raw)
	w.Close()
	k, err := LoadBTF([]string{btfELF(t, c.Bytes(), uint64(len(raw)))})
	if err != nil {
		t.Fatal(err)
	}
	if k.Base == nil || !hasVmlinuxTypes(k.Base) {
		t.Errorf("the kernel's BTF was not read from the compressed section")
	}
}
