// Package symbolize names a place in an ELF binary: the function its
// symbol table gives and the source file and line its DWARF line table
// gives, from the binary itself or from the separate debug file a
// distribution ships under /usr/lib/debug/.build-id. It also reads the
// build-id, by which a place can be symbolized later elsewhere.
//
// The binaries are a traced program's: their bytes are anyone's. What a
// binary costs is bounded (elfbound: each section's size before it is
// read, each binary's bytes and time, the memory all binaries kept hold
// together), and its names are read in the background: a frame is placed
// at once (file, offset, build-id), named when the names are there.
package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound"
	"github.com/rdmatrace/rdmatrace/internal/host/safeopen"
)

// MaxLines bounds the answers of Line (and of AfterCall) kept for one
// binary.
const MaxLines = 1 << 14

// Bounds. A binary's symbols and DWARF together: a distribution's libc
// with its debug file reads 10 MB, a large C++ program's DWARF can be
// gigabytes (read without lines, by its symbols). All binaries kept hold
// at most MaxHeld; the least recently used are dropped for a new one.
const (
	maxBinaries = 64
	// MaxSection bounds one section, decompressed; MaxFile a binary's
	// sections together (with its debug file's).
	MaxSection = 256 << 20
	MaxFile    = 256 << 20
	// MaxHeld bounds what all binaries kept hold.
	MaxHeld = 512 << 20
	// LoadTime bounds reading one binary's names (under emulation, a
	// distribution's libc with its debug file takes seconds); LookupTime
	// the lookups of its lines, together.
	LoadTime   = 30 * time.Second
	LookupTime = 30 * time.Second
	// maxNote bounds the note sections read of a binary, together (the
	// build-id's is 36 bytes).
	maxNote = 1 << 20
	// maxRanges bounds the address ranges of one binary's units.
	maxRanges = 1 << 20
	// maxLoading bounds the binaries whose names are read at once.
	maxLoading = 4
)

// Symbolizer reads and caches binaries. Its methods are safe for
// concurrent use.
type Symbolizer struct {
	// DebugRoots are where separate debug files are looked for by
	// build-id (/usr/lib/debug when empty).
	DebugRoots []string

	held    *elfbound.Budget
	loading chan struct{}
	mu      sync.Mutex
	bins    map[fileKey]*Binary
	use     uint64 // a clock of uses, for dropping the least recent
}

// fileKey is a file's identity: a file replaced at the same path is
// another binary.
type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

// New returns an empty Symbolizer.
func New() *Symbolizer {
	return &Symbolizer{bins: map[fileKey]*Binary{}, held: elfbound.NewBudget(MaxHeld), loading: make(chan struct{}, maxLoading)}
}

// Binary is what was read of one ELF file: at once its headers and
// build-id; its names (symbols, line table) once loaded.
type Binary struct {
	Path     string
	BuildID  string
	Machine  elf.Machine
	Dev, Ino uint64
	loads    []elf.ProgHeader // PT_LOAD
	file     *os.File
	ef       *elfbound.File
	s        *Symbolizer

	start sync.Once
	done  chan struct{} // closed once the names are read, or given up
	// Set before done is closed, read-only after.
	funcs     []function // sorted by addr
	symtab    bool       // funcs are a full symbol table's, not .dynsym's
	dwarf     *elfbound.DWARF
	ranges    []unitRange // sorted by lo
	debugRead uint64      // what the debug file's reads took
	problem   error
	// Lines says whether a line table was found; Symbols a symbol table
	// (valid once loaded).
	Lines, Symbols bool

	// lmu holds Line's lookups (a long one does not hold AfterCall, which
	// the probes' reader calls, nor the state under mu); cmu AfterCall's.
	lmu     sync.Mutex
	lines   map[uint64]line // Line's answers
	spent   time.Duration   // in lookups
	cmu     sync.Mutex
	calls   map[uint64]bool // AfterCall's
	mu      sync.Mutex
	late    bool
	dropped bool // out of the cache: closed once loaded
	closed  bool
	used    uint64
}

type function struct {
	addr, size uint64
	name       string
}

type line struct {
	file string
	line int
}

// unitRange is an address range of a compilation unit.
type unitRange struct {
	lo, hi uint64
	unit   int32
}

// Open reads the binary at path (a regular file: never a FIFO's wait nor
// a device's open), with its names: it waits for them.
func (s *Symbolizer) Open(path string) (*Binary, error) {
	f, err := safeopen.Regular(path)
	if err != nil {
		return nil, err
	}
	b, err := s.OpenFile(f, path)
	if err != nil {
		return nil, err
	}
	b.Wait(0)
	return b, nil
}

// OpenFile reads the headers and build-id of the open file f, called
// name, and keeps f while the binary is kept (or closes it: the binary
// was known by its device, inode, size and change time). Its names are
// read when Start or Wait asks.
func (s *Symbolizer) OpenFile(f *os.File, name string) (*Binary, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	k := fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}
	s.mu.Lock()
	if b, ok := s.bins[k]; ok {
		s.use++
		b.used = s.use
		s.mu.Unlock()
		f.Close()
		return b, nil
	}
	s.mu.Unlock()
	b, err := s.read(f, name, st.Size)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.Dev, b.Ino = st.Dev, st.Ino
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.bins[k]; ok { // read twice at once: keep one
		b.drop()
		return old, nil
	}
	if len(s.bins) >= maxBinaries {
		s.dropOldest(nil)
	}
	s.use++
	b.used = s.use
	s.bins[k] = b
	return b, nil
}

// Close drops every binary: their files are closed once their names
// are read.
func (s *Symbolizer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, b := range s.bins {
		delete(s.bins, k)
		b.drop()
	}
}

// dropOldest drops the least recently used binary other than keep;
// false when there is none. s.mu is held.
func (s *Symbolizer) dropOldest(keep *Binary) bool {
	var oldest fileKey
	var ob *Binary
	for k, b := range s.bins {
		if b != keep && (ob == nil || b.used < ob.used) {
			oldest, ob = k, b
		}
	}
	if ob == nil {
		return false
	}
	delete(s.bins, oldest)
	ob.drop()
	return true
}

// makeRoom drops binaries until n bytes of MaxHeld are free for b, or
// none is left to drop.
func (s *Symbolizer) makeRoom(b *Binary, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.held.Left() < n && s.dropOldest(b) {
	}
}

// drop takes the binary out of use: its file is closed and its bytes
// given back once its names are read.
func (b *Binary) drop() {
	b.start.Do(func() { close(b.done) }) // never to be loaded now
	b.mu.Lock()
	b.dropped = true
	b.mu.Unlock()
	b.release()
}

func (b *Binary) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dropped || b.closed || !b.isDone() {
		return
	}
	b.closed = true
	b.s.held.Give(b.held())
	b.file.Close()
}

// held is what the binary's reads took of MaxHeld.
func (b *Binary) held() uint64 {
	return b.ef.Read() + b.debugRead
}

func (b *Binary) isDone() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// limits are one file's bounds.
func (s *Symbolizer) limits() elfbound.Limits {
	return elfbound.Limits{Section: MaxSection, File: MaxFile, Time: LoadTime, Budget: s.held}
}

// read parses the headers and build-id of one binary; a corrupt ELF is an
// error naming the file, never a panic.
func (s *Symbolizer) read(f *os.File, path string, size int64) (b *Binary, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%s: unreadable ELF: %v", path, r)
		}
	}()
	ef, err := elfbound.Open(f, size, s.limits())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b = &Binary{Path: path, Machine: ef.Machine, file: f, ef: ef, s: s, done: make(chan struct{}),
		lines: map[uint64]line{}, calls: map[uint64]bool{}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p)
		}
	}
	b.BuildID = buildID(ef)
	return b, nil
}

// Start begins reading the binary's names in the background (once).
func (b *Binary) Start() {
	b.start.Do(func() {
		go func() {
			b.s.loading <- struct{}{}
			defer func() { <-b.s.loading }()
			b.load()
		}()
	})
}

// Wait starts reading the names and waits for them at most timeout (0:
// until they are read). It says whether they are: read, or given up.
func (b *Binary) Wait(timeout time.Duration) bool {
	b.Start()
	if timeout <= 0 {
		<-b.done
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.done:
		return true
	case <-t.C:
		return false
	}
}

// Loaded says whether the names are read (or given up), without waiting.
func (b *Binary) Loaded() bool { return b.isDone() }

// Problem is why the binary's names are missing or partial: a bound
// reached, a corrupt table. nil once loaded without one (or not yet
// loaded).
func (b *Binary) Problem() error {
	if !b.isDone() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.problem
}

// SetLate notes that someone waited for the names and gave up; Late says
// so (waiters may then not wait).
func (b *Binary) SetLate() {
	b.mu.Lock()
	b.late = true
	b.mu.Unlock()
}

// Dropped says whether the binary is out of the cache (its file closed,
// or to be): open it again to read its code.
func (b *Binary) Dropped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Late says whether a wait for the names has timed out before.
func (b *Binary) Late() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.late
}

// load reads the symbols and the line table, the debug file's where the
// binary lacks them; a bound reached or a table that does not parse is
// the binary's problem, and the names read until then stand.
func (b *Binary) load() {
	defer func() {
		if r := recover(); r != nil {
			b.problem = fmt.Errorf("unreadable ELF: %v", r)
			b.dwarf, b.ranges = nil, nil
		}
		b.Symbols, b.Lines = len(b.funcs) > 0, b.ranges != nil
		close(b.done)
		b.release()
	}()
	b.ef.SetDeadline(time.Now().Add(LoadTime))
	b.s.makeRoom(b, claim(b.ef))
	var probs []error
	var err error
	b.funcs, b.symtab, err = functions(b.ef)
	probs = append(probs, err)
	probs = append(probs, b.readLines(b.ef))
	if (!b.symtab || b.dwarf == nil) && b.BuildID != "" {
		probs = append(probs, b.readDebugFile())
	}
	b.problem = errors.Join(probs...)
}

// claim is what reading a file's names would take: its symbol tables and
// DWARF sections, decompressed, as their headers claim.
func claim(ef *elfbound.File) uint64 {
	var n uint64
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_SYMTAB || s.Type == elf.SHT_DYNSYM || s.Type == elf.SHT_STRTAB || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			if sz, err := ef.Size(i); err == nil {
				n += min(sz, MaxSection)
			}
		}
	}
	return min(n, MaxFile)
}

// readDebugFile fills what the binary lacks from its separate debug file
// (/usr/lib/debug/.build-id/xx/yyyy.debug), when there is one.
func (b *Binary) readDebugFile() error {
	if len(b.BuildID) < 4 {
		return nil
	}
	roots := b.s.DebugRoots
	if len(roots) == 0 {
		roots = []string{"/usr/lib/debug"}
	}
	for _, r := range roots {
		p := filepath.Join(r, ".build-id", b.BuildID[:2], b.BuildID[2:]+".debug")
		f, err := safeopen.Regular(p)
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		lim := b.s.limits()
		lim.File = MaxFile - min(b.ef.Read(), MaxFile)
		df, err := elfbound.Open(f, st.Size(), lim)
		if err != nil {
			f.Close()
			return fmt.Errorf("debug file %s: %w", p, err)
		}
		// What is read is kept in memory: the file is not needed after.
		defer func() { b.debugRead = df.Read(); f.Close() }()
		if buildID(df) != b.BuildID {
			return nil
		}
		var probs []error
		if fs, full, err := functions(df); full && !b.symtab {
			b.funcs, b.symtab = fs, true // static functions too, not only the exported
		} else if err != nil {
			probs = append(probs, err)
		}
		if b.dwarf == nil {
			probs = append(probs, b.readLines(df))
		}
		if err := errors.Join(probs...); err != nil {
			return fmt.Errorf("debug file %s: %w", p, err)
		}
		return nil
	}
	return nil
}

// buildID is the hex of the GNU build-id note, "" when there is none.
// The notes read are maxNote bytes at most, together.
func buildID(f *elfbound.File) string {
	left := uint64(maxNote)
	for i, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		sz, err := f.Size(i)
		if err != nil || sz > left {
			continue
		}
		left -= sz
		data, err := f.Data(i)
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
func functions(f *elfbound.File) (out []function, full bool, err error) {
	var syms []elf.Symbol
	if i := f.SectionByType(elf.SHT_SYMTAB); i >= 0 {
		syms, err = f.Symbols(i)
		full = err == nil && len(syms) > 0
	}
	if !full {
		if i := f.SectionByType(elf.SHT_DYNSYM); i >= 0 {
			var derr error
			syms, derr = f.Symbols(i)
			err = errors.Join(err, derr)
		}
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		out = append(out, function{addr: s.Value, size: s.Size, name: s.Name})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	if err != nil {
		err = fmt.Errorf("symbols: %w", err)
	}
	return out, full, err
}

// readLines keeps the DWARF data for Line, with the units' address ranges
// sorted; no DWARF is no error.
func (b *Binary) readLines(f *elfbound.File) error {
	d, err := f.DWARF()
	if err != nil {
		return fmt.Errorf("no lines: %w", err)
	}
	if d == nil {
		return nil
	}
	deadline := time.Now().Add(LoadTime)
	var ranges []unitRange
	r := d.Reader()
	for i, u := range d.Units {
		if i%256 == 0 && time.Now().After(deadline) {
			return fmt.Errorf("no lines: the line table's units took longer than %v", LoadTime)
		}
		r.Seek(u)
		e, err := r.Next()
		if err != nil || e == nil {
			continue
		}
		rs, err := d.Ranges(e)
		if err != nil {
			continue
		}
		for _, x := range rs {
			if len(ranges) >= maxRanges {
				return fmt.Errorf("no lines: more than %d address ranges", maxRanges)
			}
			if x[0] < x[1] {
				ranges = append(ranges, unitRange{lo: x[0], hi: x[1], unit: int32(i)})
			}
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].lo < ranges[j].lo })
	b.dwarf, b.ranges = d, ranges
	if b.ranges == nil {
		b.ranges = []unitRange{}
	}
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

// Func names the function holding addr, "" when none does (or the names
// are not read yet).
func (b *Binary) Func(addr uint64) string {
	if !b.isDone() {
		return ""
	}
	i := sort.Search(len(b.funcs), func(i int) bool { return b.funcs[i].addr > addr }) - 1
	if i < 0 {
		return ""
	}
	if f := b.funcs[i]; f.size == 0 || addr < f.addr+f.size {
		return f.name
	}
	return ""
}

// Line is the source file and line of addr, "" and 0 when unknown (or
// the names are not read yet). Only the compilation unit that holds addr
// is read, and what was found is kept, a bounded number. Lookups stop
// once they have taken LookupTime for the binary.
func (b *Binary) Line(addr uint64) (file string, ln int) {
	if !b.isDone() || b.dwarf == nil {
		return "", 0
	}
	b.lmu.Lock()
	defer b.lmu.Unlock()
	if l, ok := b.lines[addr]; ok {
		return l.file, l.line
	}
	if b.spent > LookupTime {
		return "", 0
	}
	start := time.Now()
	defer func() {
		if recover() != nil { // bytes debug/dwarf did not foresee
			file, ln = "", 0
		}
		if len(b.lines) >= MaxLines {
			clear(b.lines)
		}
		b.lines[addr] = line{file: file, line: ln}
		if b.spent += time.Since(start); b.spent > LookupTime {
			b.mu.Lock()
			if b.problem == nil {
				b.problem = fmt.Errorf("its line lookups took longer than %v: no more lines are looked up", LookupTime)
			}
			b.mu.Unlock()
		}
	}()
	u := b.unitOf(addr)
	if u < 0 {
		return "", 0
	}
	r := b.dwarf.Reader()
	r.Seek(b.dwarf.Units[u])
	cu, err := r.Next()
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

// unitOf is the unit whose ranges hold addr, -1 when none does.
func (b *Binary) unitOf(addr uint64) int {
	i := sort.Search(len(b.ranges), func(i int) bool { return b.ranges[i].lo > addr }) - 1
	// Ranges may nest (a unit's around another's): look back a little.
	for j := i; j >= 0 && j > i-16; j-- {
		if r := b.ranges[j]; addr < r.hi {
			return int(r.unit)
		}
	}
	return -1
}

// Cached is Place when its answer needs no lookup: the names are read,
// and the line is known already (or the binary has no lines). ok is false
// otherwise, or while a lookup is under way: Cached never waits.
func (b *Binary) Cached(off uint64) (fn, file string, ln int, ok bool) {
	if !b.isDone() {
		return "", "", 0, false
	}
	addr, in := b.Addr(off)
	if !in {
		return "", "", 0, true
	}
	fn = b.Func(addr - 1)
	if b.dwarf == nil {
		return fn, "", 0, true
	}
	if !b.lmu.TryLock() {
		return "", "", 0, false
	}
	defer b.lmu.Unlock()
	l, ok := b.lines[addr-1]
	return fn, l.file, l.line, ok
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
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if v, ok := b.calls[off]; ok {
		return v
	}
	_, err := b.ef.ReadAt(buf[:], int64(off)-int64(len(buf)))
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
