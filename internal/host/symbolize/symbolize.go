// Package symbolize names a place in an ELF binary: the function its
// symbol table gives and the source file and line its DWARF line table
// gives, from the binary itself or from the separate debug file a
// distribution ships under /usr/lib/debug/.build-id. It also reads the
// build-id, by which a place can be symbolized later elsewhere. Binaries
// are read once and kept, a bounded number of them.
package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
)

// MaxLines bounds the answers of Line (and of AfterCall) kept for one
// binary.
const MaxLines = 1 << 14

// maxBinaries bounds the binaries kept at once.
const maxBinaries = 64

// Symbolizer reads and caches binaries. Its methods are safe for
// concurrent use.
type Symbolizer struct {
	// DebugRoots are where separate debug files are looked for by
	// build-id (/usr/lib/debug when empty).
	DebugRoots []string

	mu   sync.Mutex
	bins map[fileKey]*Binary
}

// fileKey is a file's identity: a file replaced at the same path is
// another binary.
type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

// New returns an empty Symbolizer.
func New() *Symbolizer { return &Symbolizer{bins: map[fileKey]*Binary{}} }

// Binary is what was read of one ELF file.
type Binary struct {
	Path    string
	BuildID string
	Machine elf.Machine
	loads   []elf.ProgHeader // PT_LOAD
	funcs   []function       // sorted by addr
	symtab  bool             // funcs are a full symbol table's, not .dynsym's
	dwarf   *dwarf.Data
	mu      sync.Mutex
	lines   map[uint64]line // Line's answers
	calls   map[uint64]bool // AfterCall's
	// Lines says whether a line table was found; Symbols a symbol table.
	Lines, Symbols bool
	text           io.ReaderAt
	close          func() error
}

type function struct {
	addr, size uint64
	name       string
}

type line struct {
	file string
	line int
}

// Open reads the binary at path (cached by its device, inode, size and
// change time).
func (s *Symbolizer) Open(path string) (*Binary, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	k := fileKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bins[k]; ok {
		return b, nil
	}
	b, err := s.read(path)
	if err != nil {
		return nil, err
	}
	if len(s.bins) >= maxBinaries {
		for old, ob := range s.bins { // any one: the map's order will do
			ob.close()
			delete(s.bins, old)
			break
		}
	}
	s.bins[k] = b
	return b, nil
}

// read parses one binary; a corrupt ELF or DWARF is an error naming the
// file, never a panic (debug/elf and debug/dwarf return errors; a panic
// in them on bytes they did not foresee is caught here too).
func (s *Symbolizer) read(path string) (b *Binary, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%s: unreadable ELF: %v", path, r)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not an ELF file: %w", path, err)
	}
	b = &Binary{Path: path, Machine: ef.Machine, text: f, close: f.Close, lines: map[uint64]line{}, calls: map[uint64]bool{}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	b.BuildID = buildID(ef)
	b.funcs, b.symtab = functions(ef)
	if err := b.readLines(ef); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if (!b.symtab || b.dwarf == nil) && b.BuildID != "" {
		s.readDebugFile(b)
	}
	b.Symbols, b.Lines = len(b.funcs) > 0, b.dwarf != nil
	return b, nil
}

// readDebugFile fills what the binary lacks from its separate debug file
// (/usr/lib/debug/.build-id/xx/yyyy.debug), when there is one. A debug
// file that does not parse is passed over: the binary's own names stand.
func (s *Symbolizer) readDebugFile(b *Binary) {
	roots := s.DebugRoots
	if len(roots) == 0 {
		roots = []string{"/usr/lib/debug"}
	}
	for _, r := range roots {
		p := filepath.Join(r, ".build-id", b.BuildID[:2], b.BuildID[2:]+".debug")
		df, err := elf.Open(p)
		if err != nil {
			continue
		}
		func() {
			// Kept open while the binary is: its DWARF reads from it.
			defer func() {
				if recover() != nil {
					b.dwarf = nil
				}
			}()
			if buildID(df) != b.BuildID {
				df.Close()
				return
			}
			if fs, full := functions(df); full && !b.symtab {
				b.funcs, b.symtab = fs, true // static functions too, not only the exported
			}
			if b.dwarf == nil {
				_ = b.readLines(df)
			}
			own := b.close
			b.close = func() error { df.Close(); return own() }
		}()
		return
	}
}

// buildID is the hex of the GNU build-id note, "" when there is none.
func buildID(f *elf.File) string {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		order := f.ByteOrder
		for len(data) >= 12 {
			nsz, dsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
			data = data[12:]
			n, d := align4(nsz), align4(dsz)
			if uint64(n)+uint64(d) > uint64(len(data)) {
				break
			}
			if typ == 3 && nsz == 4 && bytes.Equal(data[:4], []byte("GNU\x00")) { // NT_GNU_BUILD_ID
				return hex.EncodeToString(data[n : n+dsz])
			}
			data = data[n+d:]
		}
	}
	return ""
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }

// functions are the binary's function symbols, .symtab's (full) else
// .dynsym's (the exported ones only), sorted by address.
func functions(f *elf.File) (out []function, full bool) {
	syms, err := f.Symbols()
	full = err == nil && len(syms) > 0
	if !full {
		syms, _ = f.DynamicSymbols()
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		out = append(out, function{addr: s.Value, size: s.Size, name: s.Name})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out, full
}

// readLines keeps the DWARF data for Line; no DWARF is no error.
func (b *Binary) readLines(f *elf.File) error {
	if f.Section(".debug_info") == nil || f.Section(".debug_line") == nil {
		return nil
	}
	d, err := f.DWARF()
	if err != nil {
		return fmt.Errorf("corrupt DWARF: %w", err)
	}
	b.dwarf = d
	return nil
}

// Addr is the virtual address in the binary of an offset in its file; ok
// false when no loaded segment holds it.
func (b *Binary) Addr(off uint64) (uint64, bool) {
	for _, p := range b.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// Func names the function holding addr, "" when none does.
func (b *Binary) Func(addr uint64) string {
	i := sort.Search(len(b.funcs), func(i int) bool { return b.funcs[i].addr > addr }) - 1
	if i < 0 {
		return ""
	}
	if f := b.funcs[i]; f.size == 0 || addr < f.addr+f.size {
		return f.name
	}
	return ""
}

// Line is the source file and line of addr, "" and 0 when unknown. Only
// the compilation unit that holds addr is read (a distribution's libc
// has hundreds), and what was found is kept, a bounded number.
func (b *Binary) Line(addr uint64) (file string, ln int) {
	if b.dwarf == nil {
		return "", 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.lines[addr]; ok {
		return l.file, l.line
	}
	defer func() {
		if recover() != nil { // bytes debug/dwarf did not foresee
			file, ln = "", 0
		}
		if len(b.lines) >= MaxLines {
			clear(b.lines)
		}
		b.lines[addr] = line{file: file, line: ln}
	}()
	r := b.dwarf.Reader()
	cu, err := r.SeekPC(addr)
	if err != nil || cu == nil {
		return "", 0
	}
	lr, err := b.dwarf.LineReader(cu)
	if err != nil || lr == nil {
		return "", 0
	}
	var e dwarf.LineEntry
	if err := lr.SeekPC(addr, &e); err != nil || e.File == nil {
		return "", 0
	}
	return e.File.Name, e.Line
}

// Place names the place a return address (at file offset off) returns
// to: the call before it, so the function and line are those of
// off-1. ok is false when no loaded segment holds off.
func (b *Binary) Place(off uint64) (fn, file string, ln int, ok bool) {
	addr, ok := b.Addr(off)
	if !ok {
		return "", "", 0, false
	}
	fn = b.Func(addr - 1)
	file, ln = b.Line(addr - 1)
	return fn, file, ln, true
}

// AfterCall says whether the bytes before file offset off end in a call
// instruction: what a real return address points after. A frame-pointer
// walk through code built without frame pointers reads data as return
// addresses; this tells them apart (it cannot tell a frame skipped).
func (b *Binary) AfterCall(off uint64) bool {
	var buf [7]byte
	if off < uint64(len(buf)) {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.calls[off]; ok {
		return v
	}
	_, err := b.text.ReadAt(buf[:], int64(off)-int64(len(buf)))
	v := err == nil && endsInCall(b.Machine, buf)
	if len(b.calls) >= MaxLines {
		clear(b.calls)
	}
	b.calls[off] = v
	return v
}

// endsInCall tells whether 7 bytes of code end with a call: x86-64's
// call rel32 (e8), or an indirect call (ff /2) of 2, 3, 4, 6 or 7 bytes;
// arm64's BL or BLR.
func endsInCall(m elf.Machine, c [7]byte) bool {
	switch m {
	case elf.EM_X86_64:
		if c[2] == 0xe8 {
			return true
		}
		for _, n := range []int{2, 3, 4, 6, 7} {
			if c[7-n] == 0xff && (c[7-n+1]>>3)&7 == 2 {
				return true
			}
		}
	case elf.EM_AARCH64:
		ins := binary.LittleEndian.Uint32(c[3:])
		return ins&0xfc000000 == 0x94000000 || ins&0xfffffc1f == 0xd63f0000
	}
	return false
}
