package symbolize

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
)

// build compiles testdata/calls.c with DWARF and frame pointers, and a
// stripped copy.
func build(t *testing.T) (prog, stripped string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("the symbolizer's test builds a C program: no cc (apt-get install gcc)")
	}
	dir := t.TempDir()
	prog, stripped = filepath.Join(dir, "calls"), filepath.Join(dir, "calls-stripped")
	for _, args := range [][]string{
		// -rdynamic: the stripped copy keeps main and sink in .dynsym,
		// as a shared library keeps its exported functions.
		{cc, "-g", "-O0", "-fno-omit-frame-pointer", "-rdynamic", "-Wl,--build-id", "-o", prog, "testdata/calls.c"},
		{"objcopy", "--strip-all", prog, stripped},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return prog, stripped
}

// callsTo are the file offsets of the return addresses of the calls to
// fn in prog (the instruction after each call), found by disassembly.
func callsTo(t *testing.T, prog, fn string) []uint64 {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", prog).Output()
	if err != nil {
		t.Skipf("objdump: %v", err)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := strings.Split(string(out), "\n")
	var offs []uint64
	for i, l := range lines {
		if !strings.Contains(l, "call") || !strings.Contains(l, "<"+fn+">") || i+1 >= len(lines) {
			continue
		}
		var next uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(lines[i+1]), "%x:", &next); err != nil {
			t.Fatalf("objdump line %q: %v", lines[i+1], err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && next >= p.Vaddr && next < p.Vaddr+p.Filesz {
				offs = append(offs, next-p.Vaddr+p.Off)
			}
		}
	}
	return offs
}

func lineOf(t *testing.T, marker string) int {
	b, _ := os.ReadFile("testdata/calls.c")
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("no %s", marker)
	return 0
}

func TestAReturnAddressIsNamedByTheCallBeforeIt(t *testing.T) {
	prog, stripped := build(t)
	offs := callsTo(t, prog, "sink")
	if len(offs) != 2 {
		t.Fatalf("calls to sink at %x, want 2", offs)
	}
	s := New()
	b, err := s.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	if b.BuildID == "" || !b.Symbols || !b.Lines {
		t.Fatalf("build-id %q, symbols %v, lines %v", b.BuildID, b.Symbols, b.Lines)
	}
	want := []struct {
		fn   string
		line int
	}{{"helper", lineOf(t, "HELPER_CALL")}, {"main", lineOf(t, "MAIN_CALL")}}
	for i, off := range offs {
		fn, file, ln, ok := b.Place(off)
		if !ok || fn != want[i].fn || filepath.Base(file) != "calls.c" || ln != want[i].line {
			t.Errorf("0x%x: %s (%s:%d) ok %v, want %s (calls.c:%d)", off, fn, file, ln, ok, want[i].fn, want[i].line)
		}
		if !b.AfterCall(off) {
			t.Errorf("0x%x follows a call, AfterCall says no", off)
		}
		if b.AfterCall(off + 1) {
			t.Errorf("0x%x is inside an instruction, AfterCall says it follows a call", off+1)
		}
	}
	sb, err := s.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if fn, file, _, _ := sb.Place(offs[0]); fn != "" || file != "" || sb.BuildID != b.BuildID {
		t.Errorf("stripped: %q %q build-id %q, want no names and build-id %s", fn, file, sb.BuildID, b.BuildID)
	}
}

// A stripped binary whose debug file is installed by build-id is named
// from it: its static functions too, which its .dynsym lacks.
func TestAStrippedBinaryIsNamedFromItsDebugFile(t *testing.T) {
	prog, stripped := build(t)
	s := New()
	b, err := s.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dbg := filepath.Join(root, ".build-id", b.BuildID[:2], b.BuildID[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(dbg), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("objcopy", "--only-keep-debug", prog, dbg).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	s.DebugRoots = []string{root}
	offs := callsTo(t, prog, "sink")
	sb, err := s.Open(stripped)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct {
		fn     string
		marker string
	}{{"helper", "HELPER_CALL"}, {"main", "MAIN_CALL"}} {
		if fn, file, ln, _ := sb.Place(offs[i]); fn != w.fn || filepath.Base(file) != "calls.c" || ln != lineOf(t, w.marker) {
			t.Errorf("stripped with its debug file: %s (%s:%d), want %s (calls.c:%d)", fn, file, ln, w.fn, lineOf(t, w.marker))
		}
	}
}

func TestACorruptBinaryIsAnErrorNamingIt(t *testing.T) {
	prog, _ := build(t)
	data, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "truncated")
	if err := os.WriteFile(bad, data[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New().Open(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a truncated ELF: %v, want an error naming %s", err, bad)
	}
}

// FuzzReadBinary: whatever the bytes, reading them as a binary and
// naming places in it is an error or an answer, never a crash.
func FuzzReadBinary(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/exe"); err == nil && len(data) > 4096 {
		f.Add(data[:4096])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	dir := f.TempDir()
	// The bombs: .debug_info compressed, claiming 4 GiB (the stream holds
	// 1 MiB); .debug_info claiming 1 GiB past the end of the file.
	for _, info := range []elftest.Section{
		{Name: ".debug_info", Type: elf.SHT_PROGBITS, Flags: elf.SHF_COMPRESSED, Data: elftest.Zeros(f, 1<<20), Claim: 4 << 30},
		{Name: ".debug_info", Type: elf.SHT_PROGBITS, Hole: 1 << 30},
	} {
		p := elftest.File{Type: elf.ET_EXEC, Sections: []elftest.Section{info, {Name: ".debug_line", Type: elf.SHT_PROGBITS, Data: make([]byte, 16)}}}.Write(f, dir, "bomb")
		// The headers come first: a hole's claim is past the end of a seed.
		if r, err := os.Open(p); err == nil {
			b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
			r.Close()
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "bin")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s := New()
		defer s.Close()
		b, err := s.Open(p)
		if err != nil {
			return
		}
		for _, off := range []uint64{0, 1, 64, 4096, uint64(len(data)) - 1} {
			b.Place(off)
			b.AfterCall(off)
		}
	})
}
