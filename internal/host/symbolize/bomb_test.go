package symbolize

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
)

// allocated is what fn allocated on the heap.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// bombELF is a small executable with a build-id, code and a line table
// whose .debug_info is info (as mkelf.py of the review makes them).
func bombELF(t testing.TB, dir string, info elftest.Section) string {
	t.Helper()
	note := []byte{4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0}
	for i := 1; i <= 20; i++ {
		note = append(note, byte(i))
	}
	text := append(make([]byte, 64), 0xe8, 0, 0, 0, 0, 0xc3)
	info.Name, info.Type = ".debug_info", elf.SHT_PROGBITS
	return elftest.File{Type: elf.ET_EXEC, Sections: []elftest.Section{
		info,
		{Name: ".debug_line", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)},
		{Name: ".debug_abbrev", Type: elf.SHT_PROGBITS, Data: []byte{0}},
		{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Flags: elf.SHF_ALLOC, Data: note},
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: text},
	}}.Write(t, dir, "bomb")
}

// A binary's DWARF that decompresses to 512 MiB (a 650 KB file: 1.66 GB
// of memory before the bounds), or sits in a 1 GiB hole of a sparse file
// (8 KB on disk: 2.35 GB), is given up with its bound named: the binary
// is still placed (its build-id, offsets), in little memory.
func TestDWARFBombsAreGivenUpInLittleMemory(t *testing.T) {
	for name, info := range map[string]elftest.Section{
		"zlib, 512 MiB claimed": {Flags: elf.SHF_COMPRESSED, Claim: 512 << 20, Data: elftest.Zeros(t, 512<<20)},
		"a 1 GiB hole":          {Hole: 1 << 30},
	} {
		t.Run(name, func(t *testing.T) {
			p := bombELF(t, t.TempDir(), info)
			s := New()
			defer s.Close()
			var b *Binary
			var err error
			if n := allocated(func() { b, err = s.Open(p) }); n > 64<<20 {
				t.Errorf("Open allocated %d MiB", n>>20)
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.BuildID != "0102030405060708090a0b0c0d0e0f1011121314" {
				t.Errorf("build-id %q", b.BuildID)
			}
			if b.Lines {
				t.Error("lines read from the bomb")
			}
			if err := b.Problem(); err == nil || !strings.Contains(err.Error(), ".debug_info") || !strings.Contains(err.Error(), "256 MiB") {
				t.Errorf("problem %v, want one naming .debug_info and its bound", err)
			}
		})
	}
}

// The review's program whose .debug_info section header points at a 1.5
// GiB hole (evilelf.py dwarfhole): it runs as before; its frames are
// named by its symbols, without lines.
func TestAProgramWhoseDWARFIsAHoleIsNamedByItsSymbols(t *testing.T) {
	prog, _ := build(t)
	hole := filepath.Join(t.TempDir(), "calls-hole")
	moveToHole(t, prog, hole, ".debug_info", 3<<29)
	offs := callsTo(t, prog, "sink")
	s := New()
	defer s.Close()
	var b *Binary
	var err error
	if n := allocated(func() { b, err = s.Open(hole) }); n > 64<<20 {
		t.Errorf("Open allocated %d MiB", n>>20)
	}
	if err != nil {
		t.Fatal(err)
	}
	if fn, file, _, _ := b.Place(offs[0]); fn != "helper" || file != "" {
		t.Errorf("placed at %q %q, want helper without a line", fn, file)
	}
	if err := b.Problem(); err == nil || !strings.Contains(err.Error(), "1.5 GiB") {
		t.Errorf("problem %v, want one naming the 1.5 GiB", err)
	}
}

// moveToHole copies the ELF file src to dst with section name's header
// moved to a hole of size bytes at the end of the sparse file.
func moveToHole(t *testing.T, src, dst, name string, size uint64) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	le := binary.LittleEndian
	shoff, shentsize := le.Uint64(b[0x28:]), uint64(le.Uint16(b[0x3a:]))
	hole := (uint64(len(b)) + 0xfff) &^ 0xfff
	for i, s := range ef.Sections {
		if s.Name == name {
			h := shoff + uint64(i)*shentsize
			le.PutUint64(b[h+0x18:], hole)
			le.PutUint64(b[h+0x20:], size)
			if s.Flags&elf.SHF_COMPRESSED != 0 {
				le.PutUint64(b[h+0x08:], uint64(s.Flags&^elf.SHF_COMPRESSED))
			}
		}
	}
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(b)
	if err := f.Truncate(int64(hole + size)); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpenABomb: what opening a binary whose DWARF is a bomb costs
// (docs/benchmarks.md): its B/op is the memory the bomb takes.
//
//	go test ./internal/host/symbolize -run '^$' -bench OpenABomb -benchmem -benchtime 3x
func BenchmarkOpenABomb(b *testing.B) {
	for name, info := range map[string]elftest.Section{
		"zlib-512MiB": {Flags: elf.SHF_COMPRESSED, Claim: 512 << 20, Data: elftest.Zeros(b, 512<<20)},
		"hole-1GiB":   {Hole: 1 << 30},
	} {
		p := bombELF(b, b.TempDir(), info)
		b.Run(name, func(b *testing.B) {
			for range b.N {
				s := New()
				if _, err := s.Open(p); err != nil {
					b.Log(err)
				}
				s.Close()
			}
		})
	}
}
