package elfbound

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

var small = Limits{Section: 16 << 20, File: 64 << 20}

// allocated is what fn allocated on the heap, in bytes.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func wantLimit(t *testing.T, err error, words ...string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want a bound's", err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// sym64 is one ELF64 symbol.
func sym64(name uint32, info byte, shndx uint16, value, size uint64) []byte {
	b := make([]byte, 24)
	le := binary.LittleEndian
	le.PutUint32(b, name)
	b[4] = info
	le.PutUint16(b[6:], shndx)
	le.PutUint64(b[8:], value)
	le.PutUint64(b[16:], size)
	return b
}

func TestSymbolsAreReadWithTheirNamesAndNoVersions(t *testing.T) {
	strs := []byte("\x00ibv_alloc_pd\x00main\x00")
	syms := append(make([]byte, 24), sym64(1, byte(elf.STT_FUNC)|byte(elf.STB_GLOBAL)<<4, 1, 0x1000, 76)...)
	syms = append(syms, sym64(14, byte(elf.STT_FUNC), 1, 0x2000, 8)...)
	syms = append(syms, sym64(999, byte(elf.STT_OBJECT), 1, 0x3000, 8)...) // a name past the table: ""
	p := buildELF(t, t.TempDir(), []sec{{name: ".dynstr", typ: elf.SHT_STRTAB, data: strs}, {name: ".dynsym", typ: elf.SHT_DYNSYM, link: 2, data: syms}})
	f := openELF(t, p, small)
	got, err := f.Symbols(f.SectionByType(elf.SHT_DYNSYM))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "ibv_alloc_pd" || got[0].Value != 0x1000 || got[0].Size != 76 || got[1].Name != "main" || got[2].Name != "" {
		t.Errorf("symbols %+v", got)
	}
}

// A .dynsym that decompresses to 256 MiB (a 300 KB file) is refused by
// its claimed size before anything is decompressed.
func TestACompressedSectionIsRefusedByTheSizeItClaims(t *testing.T) {
	const claim = 256 << 20
	p := buildELF(t, t.TempDir(), []sec{
		{name: ".dynstr", typ: elf.SHT_STRTAB, data: []byte("\x00x\x00")},
		{name: ".dynsym", typ: elf.SHT_DYNSYM, flags: elf.SHF_COMPRESSED, link: 2, data: zeros(t, claim), claim: claim},
	})
	f := openELF(t, p, small)
	var err error
	if n := allocated(func() { _, err = f.Symbols(3) }); n > 4<<20 {
		t.Errorf("refusing the section allocated %s", Bytes(n))
	}
	wantLimit(t, err, "section .dynsym, decompressed", "256 MiB", "16 MiB", "one section")
}

// A section header whose data is a 1 GiB hole of a sparse file (8 KB on
// disk) is refused the same way.
func TestASectionInAHoleIsRefusedByItsSize(t *testing.T) {
	p := buildELF(t, t.TempDir(), []sec{{name: ".debug_info", typ: elf.SHT_PROGBITS, hole: 1 << 30}, {name: ".debug_line", typ: elf.SHT_PROGBITS, data: []byte{0}}})
	f := openELF(t, p, Limits{Section: 256 << 20, File: 256 << 20})
	var err error
	if n := allocated(func() { _, err = f.DWARF() }); n > 4<<20 {
		t.Errorf("refusing the DWARF allocated %s", Bytes(n))
	}
	wantLimit(t, err, "section .debug_info", "1 GiB", "256 MiB", "one section")
}

// The section names' table is read by elf.NewFile itself: a compressed
// one is checked before.
func TestACompressedNamesTableIsRefusedBeforeParsing(t *testing.T) {
	p := buildELF(t, t.TempDir(), []sec{{name: ".shstrtab", typ: elf.SHT_STRTAB, flags: elf.SHF_COMPRESSED, claim: 3 << 30}})
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	_, err = Open(f, st.Size(), small)
	wantLimit(t, err, "section names' table, decompressed", "3 GiB")
}

// Sections read from one file add up to its bound; files sharing a budget
// add up to the budget.
func TestBoundsAddUpOverAFileAndOverFiles(t *testing.T) {
	big := make([]byte, 3<<20)
	dir := t.TempDir()
	p := buildELF(t, dir, []sec{{name: ".a", typ: elf.SHT_PROGBITS, data: big}, {name: ".b", typ: elf.SHT_PROGBITS, data: big}})
	f := openELF(t, p, Limits{Section: 4 << 20, File: 5 << 20})
	if _, err := f.Data(2); err != nil {
		t.Fatal(err)
	}
	_, err := f.Data(3)
	wantLimit(t, err, "section .b with what was read before", "one file")

	b := NewBudget(7 << 20)
	for i, want := range []bool{true, true, false} {
		g := openELF(t, p, Limits{Section: 4 << 20, Budget: b})
		_, err := g.Data(2 + i%2)
		if (err == nil) != want {
			t.Errorf("read %d with %s left: %v", i, Bytes(b.Left()), err)
		}
	}
	b.Give(3 << 20)
	if g := openELF(t, p, Limits{Budget: b}); true {
		if _, err := g.Data(2); err != nil {
			t.Errorf("after giving back: %v", err)
		}
	}
}

func TestReadsStopAtTheDeadline(t *testing.T) {
	p := buildELF(t, t.TempDir(), []sec{{name: ".a", typ: elf.SHT_PROGBITS, data: []byte("abc")}})
	f := openELF(t, p, Limits{Time: 50 * time.Millisecond})
	time.Sleep(60 * time.Millisecond)
	if _, err := f.Data(2); !errors.Is(err, ErrDeadline) {
		t.Errorf("a read past the deadline: %v", err)
	}
}

// A unit whose abbreviations start in the middle of a table would make
// debug/dwarf parse from there to the end of the section for each such
// unit: refused.
func TestAUnitWhoseAbbreviationsStartInsideATableIsRefused(t *testing.T) {
	// One table: code 1, DW_TAG_compile_unit, no children, no attributes;
	// then code 0.
	abbrev := []byte{1, 0x11, 0, 0, 0, 0}
	unit := func(ab uint32) []byte {
		b := make([]byte, 4+2+4+1+1)
		binary.LittleEndian.PutUint32(b, 8)
		binary.LittleEndian.PutUint16(b[4:], 4)
		binary.LittleEndian.PutUint32(b[6:], ab)
		b[10] = 8
		b[11] = 1 // the entry: code 1
		return b
	}
	for _, c := range []struct {
		ab uint32
		ok bool
	}{{0, true}, {1, false}} {
		p := buildELF(t, t.TempDir(), []sec{
			{name: ".debug_abbrev", typ: elf.SHT_PROGBITS, data: abbrev},
			{name: ".debug_info", typ: elf.SHT_PROGBITS, data: unit(c.ab)},
			{name: ".debug_line", typ: elf.SHT_PROGBITS, data: []byte{0}},
		})
		d, err := openELF(t, p, small).DWARF()
		if c.ok && (err != nil || d == nil || len(d.Units) != 1 || d.Units[0] != 11) {
			t.Errorf("abbreviations at %d: %v %+v", c.ab, err, d)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "starts no table")) {
			t.Errorf("abbreviations at %d: %v, want refused", c.ab, err)
		}
	}
}

func TestTooManyUnitsAreRefused(t *testing.T) {
	abbrev := []byte{1, 0x11, 0, 0, 0, 0}
	one := make([]byte, 12)
	binary.LittleEndian.PutUint32(one, 8)
	binary.LittleEndian.PutUint16(one[4:], 4)
	one[10], one[11] = 8, 1
	info := bytes.Repeat(one, MaxUnits+1)
	p := buildELF(t, t.TempDir(), []sec{
		{name: ".debug_abbrev", typ: elf.SHT_PROGBITS, data: abbrev},
		{name: ".debug_info", typ: elf.SHT_PROGBITS, data: info},
		{name: ".debug_line", typ: elf.SHT_PROGBITS, data: []byte{0}},
	})
	_, err := openELF(t, p, small).DWARF()
	wantLimit(t, err, "compilation units")
}

// A real binary reads whole: this test binary's symbols and DWARF, and
// the C library's dynamic symbols.
func TestRealBinariesRead(t *testing.T) {
	for _, p := range []string{"/proc/self/exe", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		st, _ := f.Stat()
		ef, err := Open(f, st.Size(), Limits{Section: 256 << 20, File: 512 << 20, Time: time.Minute})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if i := ef.SectionByType(elf.SHT_DYNSYM); i >= 0 {
			syms, err := ef.Symbols(i)
			if err != nil || len(syms) == 0 {
				t.Errorf("%s: .dynsym: %d symbols, %v", p, len(syms), err)
			}
		}
		if i := ef.SectionByType(elf.SHT_SYMTAB); i >= 0 {
			if _, err := ef.Symbols(i); err != nil {
				t.Errorf("%s: .symtab: %v", p, err)
			}
		}
		if _, err := ef.DWARF(); err != nil {
			t.Errorf("%s: DWARF: %v", p, err)
		}
		f.Close()
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{512: "512 B", 16 << 20: "16 MiB", 3 << 29: "1.5 GiB", 4 << 30: "4 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// Debug files as distributions ship them (compressed sections, dwz) read
// whole: the largest few installed.
func TestDistributionDebugFilesRead(t *testing.T) {
	paths, _ := filepath.Glob("/usr/lib/debug/.build-id/*/*.debug")
	sort.Slice(paths, func(i, j int) bool { return size(paths[i]) > size(paths[j]) })
	if len(paths) == 0 {
		t.Skip("no debug files installed under /usr/lib/debug/.build-id")
	}
	for _, p := range paths[:min(len(paths), 3)] {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := Open(f, size(p), Limits{Section: 256 << 20, File: 256 << 20})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		start := time.Now()
		d, err := ef.DWARF()
		if err != nil {
			t.Errorf("%s: %v", p, err)
		} else if d != nil {
			t.Logf("%s: %d units, %s read, %v", p, len(d.Units), Bytes(ef.Read()), time.Since(start))
		}
		f.Close()
	}
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}
