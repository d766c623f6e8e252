// Package elfbound reads ELF files whose bytes someone else chose (a
// traced program's libraries and binaries, a downloaded vmlinux) within
// bounds. debug/elf reads a section whole, decompressed to the size its
// header claims: a file of a few MB can claim 4 GiB, and a sparse file
// can hold a section of any size in a hole. Here every section's size,
// as decompressed, is checked before it is read; what is read of one
// file is counted, and of several files together (a Budget); the reads
// stop at a deadline. Symbols and DWARF are parsed without the costly
// corners of debug/elf and debug/dwarf: symbol versions (matched against
// every symbol), abbreviation tables read from any offset (each unit's
// table parsed to the end of the section), a unit count without bound.
package elfbound

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Limits bound what is read of one file.
type Limits struct {
	// Section bounds one section, as decompressed.
	Section uint64
	// File bounds all the sections read of the file, together.
	File uint64
	// Time bounds the reads, from Open.
	Time time.Duration
	// Budget, when set, is shared with other files: every section read
	// takes its size from it.
	Budget *Budget
}

// Header bounds: the section and program headers read before anything
// else (a real binary has tens of sections, a few program headers; an
// object file built with -ffunction-sections some thousands).
const (
	maxSections    = 1 << 16
	maxHeaderBytes = 16 << 20
)

// MaxUnits bounds the DWARF compilation units of one file: each costs
// debug/dwarf a hundred bytes or so before anything is looked up (a
// distribution's libc has 2 000, a web browser some 60 000).
const MaxUnits = 1 << 18

// A Budget is bytes that several files' reads share: a run's total, or
// memory held by a cache (which gives back what it drops).
type Budget struct {
	mu         sync.Mutex
	left, size uint64
}

// NewBudget is a budget of n bytes.
func NewBudget(n uint64) *Budget { return &Budget{left: n, size: n} }

// Size is what the budget started with.
func (b *Budget) Size() uint64 { return b.size }

// Left is what is left of it.
func (b *Budget) Left() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

func (b *Budget) take(n uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// Give returns n bytes to the budget (what a cache dropped).
func (b *Budget) Give(n uint64) {
	b.mu.Lock()
	b.left = min(b.left+n, b.size)
	b.mu.Unlock()
}

// LimitError is a read refused by a bound.
type LimitError struct {
	What         string // "section .dynsym, decompressed"
	Size, Bound  uint64
	Of           string // which bound: "one section", "one file", "all files"
	BoundIsCount bool   // Size and Bound count things, not bytes
}

func (e *LimitError) Error() string {
	if e.BoundIsCount {
		return fmt.Sprintf("%s: %d, over the bound of %d", e.What, e.Size, e.Bound)
	}
	return fmt.Sprintf("%s: %s, over the bound of %s for %s", e.What, Bytes(e.Size), Bytes(e.Bound), e.Of)
}

// ErrDeadline ends the reads of a file past Limits.Time.
var ErrDeadline = errors.New("took longer than its time bound")

// Bytes says a size for a person: 512 B, 16 MiB, 4.0 GiB.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, exp := float64(n), 0
	for v >= unit && exp < 4 {
		v /= unit
		exp++
	}
	suffix := []string{"", "KiB", "MiB", "GiB", "TiB"}[exp]
	if v == float64(uint64(v)) {
		return fmt.Sprintf("%d %s", uint64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// File is an ELF file opened within Limits. Its headers are plain
// values; its sections are read through its methods alone.
type File struct {
	elf.FileHeader
	Progs    []elf.ProgHeader
	Sections []elf.SectionHeader // Size is the decompressed size the file claims
	ef       *elf.File
	r        *deadlineReader
	lim      Limits
	size     int64
	read     uint64
}

// deadlineReader fails every read past its deadline: a decompression or
// a read of a slow file stops there.
type deadlineReader struct {
	r        io.ReaderAt
	deadline time.Time
}

func (d *deadlineReader) ReadAt(p []byte, off int64) (int, error) {
	if !d.deadline.IsZero() && time.Now().After(d.deadline) {
		return 0, ErrDeadline
	}
	return d.r.ReadAt(p, off)
}

// Open reads the headers of the ELF file r, of size bytes. Nothing else
// is read until asked for.
func Open(r io.ReaderAt, size int64, lim Limits) (f *File, err error) {
	defer catch(&err)
	dr := &deadlineReader{r: r}
	if lim.Time > 0 {
		dr.deadline = time.Now().Add(lim.Time)
	}
	if err := checkHeaders(dr, size, lim); err != nil {
		return nil, err
	}
	ef, err := elf.NewFile(dr)
	if err != nil {
		return nil, err
	}
	f = &File{FileHeader: ef.FileHeader, ef: ef, r: dr, lim: lim, size: size}
	for _, p := range ef.Progs {
		f.Progs = append(f.Progs, p.ProgHeader)
	}
	for _, s := range ef.Sections {
		f.Sections = append(f.Sections, s.SectionHeader)
	}
	// The section names' string table was read by elf.NewFile (its size
	// checked by checkHeaders): it counts.
	if i := shstrndx(ef); i > 0 {
		n := f.Sections[i].Size
		if lim.Budget != nil && !lim.Budget.take(n) {
			return nil, &LimitError{What: "section names' table", Size: n, Bound: lim.Budget.Size(), Of: "all files (" + Bytes(lim.Budget.Left()) + " left)"}
		}
		f.read = n
	}
	return f, nil
}

// SetDeadline moves the deadline of the reads to come (reading a file's
// headers now and its tables later, each within its time).
func (f *File) SetDeadline(t time.Time) { f.r.deadline = t }

// shstrndx is the index of the section names' table: the section whose
// type is SHT_STRTAB and whose name is .shstrtab, or 0.
func shstrndx(ef *elf.File) int {
	for i, s := range ef.Sections {
		if s.Name == ".shstrtab" && s.Type == elf.SHT_STRTAB {
			return i
		}
	}
	return 0
}

// catch turns a panic of debug/elf or debug/dwarf on bytes they did not
// foresee into an error.
func catch(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("unreadable ELF: %v", r)
	}
}

// checkHeaders reads the ELF header, the section header table's place and
// the section names' string table's header, and refuses what elf.NewFile
// would read without bound: a section header table of millions of
// entries (extended numbering), or a names table that claims gigabytes.
func checkHeaders(r io.ReaderAt, size int64, lim Limits) error {
	var id [elf.EI_NIDENT]byte
	if _, err := r.ReadAt(id[:], 0); err != nil {
		return fmt.Errorf("not an ELF file: %w", eofIsShort(err))
	}
	if !bytes.Equal(id[:4], []byte(elf.ELFMAG)) {
		return errors.New("not an ELF file: no ELF magic")
	}
	var bo binary.ByteOrder
	switch elf.Data(id[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return fmt.Errorf("not an ELF file: byte order %d", id[elf.EI_DATA])
	}
	is64 := elf.Class(id[elf.EI_CLASS]) == elf.ELFCLASS64
	var hdr [64]byte
	n := 52
	if is64 {
		n = 64
	}
	if _, err := r.ReadAt(hdr[:n], 0); err != nil {
		return fmt.Errorf("not an ELF file: %w", eofIsShort(err))
	}
	var shoff uint64
	var phentsize, phnum, shentsize, shnum, shstrndx uint64
	if is64 {
		shoff = bo.Uint64(hdr[40:])
		phentsize, phnum = uint64(bo.Uint16(hdr[54:])), uint64(bo.Uint16(hdr[56:]))
		shentsize, shnum, shstrndx = uint64(bo.Uint16(hdr[58:])), uint64(bo.Uint16(hdr[60:])), uint64(bo.Uint16(hdr[62:]))
	} else {
		shoff = uint64(bo.Uint32(hdr[32:]))
		phentsize, phnum = uint64(bo.Uint16(hdr[42:])), uint64(bo.Uint16(hdr[44:]))
		shentsize, shnum, shstrndx = uint64(bo.Uint16(hdr[46:])), uint64(bo.Uint16(hdr[48:])), uint64(bo.Uint16(hdr[50:]))
	}
	// shdr reads field of section header i: 64-bit and 32-bit offsets.
	shdr := func(i uint64, off64, off32 int, wide bool) (uint64, error) {
		var b [8]byte
		at, w := int64(shoff+i*shentsize), 4
		if is64 {
			at += int64(off64)
			if wide {
				w = 8
			}
		} else {
			at += int64(off32)
		}
		if _, err := r.ReadAt(b[:w], at); err != nil {
			return 0, fmt.Errorf("section header %d: %w", i, eofIsShort(err))
		}
		if w == 8 {
			return bo.Uint64(b[:]), nil
		}
		return uint64(bo.Uint32(b[:])), nil
	}
	if shoff != 0 && (shnum == 0 || shstrndx == uint64(elf.SHN_XINDEX) || phnum == 0xffff) {
		// Extended numbering: the real counts are in section header 0.
		if shnum == 0 {
			v, err := shdr(0, 32, 20, true)
			if err != nil {
				return err
			}
			shnum = v
		}
		if shstrndx == uint64(elf.SHN_XINDEX) {
			v, err := shdr(0, 40, 24, false)
			if err != nil {
				return err
			}
			shstrndx = v
		}
		if phnum == 0xffff {
			v, err := shdr(0, 44, 28, false)
			if err != nil {
				return err
			}
			phnum = v
		}
	}
	if shnum > maxSections {
		return &LimitError{What: "section headers", Size: shnum, Bound: maxSections, BoundIsCount: true}
	}
	if shnum*shentsize > maxHeaderBytes || phnum*phentsize > maxHeaderBytes {
		return &LimitError{What: "header tables", Size: max(shnum*shentsize, phnum*phentsize), Bound: maxHeaderBytes, Of: "the headers"}
	}
	if shnum == 0 || shstrndx == 0 || shstrndx >= shnum {
		return nil // no names to read (elf.NewFile checks the rest)
	}
	flags, err := shdr(shstrndx, 8, 8, true)
	if err != nil {
		return err
	}
	off, err := shdr(shstrndx, 24, 16, true)
	if err != nil {
		return err
	}
	claim, err := shdr(shstrndx, 32, 20, true)
	if err != nil {
		return err
	}
	if elf.SectionFlag(flags)&elf.SHF_COMPRESSED != 0 {
		// The compression header: ch_type, (ch_reserved,) ch_size.
		var b [8]byte
		at, w := int64(off)+8, 8
		if !is64 {
			at, w = int64(off)+4, 4
		}
		if _, err := r.ReadAt(b[:w], at); err != nil {
			return fmt.Errorf("section names' compression header: %w", eofIsShort(err))
		}
		if w == 8 {
			claim = bo.Uint64(b[:])
		} else {
			claim = uint64(bo.Uint32(b[:]))
		}
	} else if off > uint64(size) || claim > uint64(size)-off {
		return fmt.Errorf("section names' table (%s at offset %d) is past the end of the file (%s)", Bytes(claim), off, Bytes(uint64(size)))
	}
	if lim.Section > 0 && claim > lim.Section {
		return &LimitError{What: "section names' table, decompressed", Size: claim, Bound: lim.Section, Of: "one section"}
	}
	return nil
}

func eofIsShort(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Section is the index of the first section named name, -1 when none is.
func (f *File) Section(name string) int {
	for i, s := range f.Sections {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// SectionByType is the index of the first section of type t, -1 when none is.
func (f *File) SectionByType(t elf.SectionType) int {
	for i, s := range f.Sections {
		if s.Type == t {
			return i
		}
	}
	return -1
}

// Size is the size of section i once decompressed, as its header (or a
// .zdebug section's "ZLIB" header) claims: what Data would read.
func (f *File) Size(i int) (uint64, error) {
	s := f.ef.Sections[i]
	if s.Flags&elf.SHF_COMPRESSED == 0 && strings.HasPrefix(s.Name, ".zdebug") {
		var b [12]byte
		if n, _ := f.r.ReadAt(b[:], int64(s.Offset)); n == 12 && string(b[:4]) == "ZLIB" && s.FileSize >= 12 {
			return binary.BigEndian.Uint64(b[4:]), nil
		}
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 && s.Type != elf.SHT_NOBITS {
		if s.Offset > uint64(f.size) || s.FileSize > uint64(f.size)-s.Offset {
			return 0, fmt.Errorf("section %s (%s at offset %d) is past the end of the file (%s)", s.Name, Bytes(s.FileSize), s.Offset, Bytes(uint64(f.size)))
		}
	}
	return s.Size, nil
}

// Data reads section i, decompressed, within the bounds. Its bytes count
// against the file's bound and the budget whether or not they are kept.
func (f *File) Data(i int) (data []byte, err error) {
	defer catch(&err)
	if i < 0 || i >= len(f.ef.Sections) {
		return nil, fmt.Errorf("no section %d", i)
	}
	s := f.ef.Sections[i]
	if s.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("section %s has no bytes in the file (SHT_NOBITS)", s.Name)
	}
	size, err := f.Size(i)
	if err != nil {
		return nil, err
	}
	what := "section " + s.Name
	if size != s.FileSize {
		what += ", decompressed"
	}
	if f.lim.Section > 0 && size > f.lim.Section {
		return nil, &LimitError{What: what, Size: size, Bound: f.lim.Section, Of: "one section"}
	}
	if f.lim.File > 0 && f.read+size > f.lim.File {
		return nil, &LimitError{What: what + " with what was read before", Size: f.read + size, Bound: f.lim.File, Of: "one file"}
	}
	if b := f.lim.Budget; b != nil && !b.take(size) {
		return nil, &LimitError{What: what, Size: size, Bound: b.Size(), Of: "all files (" + Bytes(b.Left()) + " left)"}
	}
	f.read += size
	data, err = s.Data()
	if err != nil {
		return nil, fmt.Errorf("section %s: %w", s.Name, err)
	}
	return data, nil
}

// Read is how many bytes the file's sections took (decompressed).
func (f *File) Read() uint64 { return f.read }

// ReadAt reads the file's own bytes (code, for instance), past its
// deadline too: a few bytes at a time.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.r.r.ReadAt(p, off) }

// Symbols reads the symbol table of section i (SHT_SYMTAB or SHT_DYNSYM),
// without the symbol index 0 and without versions: each symbol's name,
// info, section, value and size.
func (f *File) Symbols(i int) (syms []elf.Symbol, err error) {
	defer catch(&err)
	data, err := f.Data(i)
	if err != nil {
		return nil, err
	}
	link := int(f.Sections[i].Link)
	if link <= 0 || link >= len(f.Sections) {
		return nil, fmt.Errorf("section %s: no string table (link %d)", f.Sections[i].Name, link)
	}
	strs, err := f.Data(link)
	if err != nil {
		return nil, err
	}
	size := elf.Sym32Size
	if f.Class == elf.ELFCLASS64 {
		size = elf.Sym64Size
	}
	if len(data)%size != 0 {
		return nil, fmt.Errorf("section %s: %d bytes, not a whole number of %d-byte symbols", f.Sections[i].Name, len(data), size)
	}
	bo := f.ByteOrder
	syms = make([]elf.Symbol, 0, max(len(data)/size-1, 0))
	for at := size; at+size <= len(data); at += size {
		e := data[at : at+size]
		var s elf.Symbol
		var name uint32
		if f.Class == elf.ELFCLASS64 {
			name = bo.Uint32(e)
			s.Info, s.Other = e[4], e[5]
			s.Section = elf.SectionIndex(bo.Uint16(e[6:]))
			s.Value, s.Size = bo.Uint64(e[8:]), bo.Uint64(e[16:])
		} else {
			name = bo.Uint32(e)
			s.Value, s.Size = uint64(bo.Uint32(e[4:])), uint64(bo.Uint32(e[8:]))
			s.Info, s.Other = e[12], e[13]
			s.Section = elf.SectionIndex(bo.Uint16(e[14:]))
		}
		s.Name = cstring(strs, name)
		syms = append(syms, s)
	}
	return syms, nil
}

// cstring is the NUL-terminated string at off, "" when off is past the end.
func cstring(b []byte, off uint32) string {
	if uint64(off) >= uint64(len(b)) {
		return ""
	}
	b = b[off:]
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// DWARF is a file's DWARF, for looking up lines: the units' entries and
// line tables, and where each unit's first entry is.
type DWARF struct {
	*dwarf.Data
	// Units are the offsets of the units' first entries (the compile
	// unit's), in order: Reader().Seek(u) then Next() reads it.
	Units []dwarf.Offset
}

// dwarfSections are what DWARF reads: the entries, their abbreviations and
// strings, the line tables, and the address ranges (DWARF 5's forms of
// each too). Types, locations, frames and macros are not read.
var dwarfSections = []string{"info", "abbrev", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// DWARF reads the file's DWARF sections for line lookups; nil and no
// error when it has no .debug_info or no .debug_line. Sections of
// relocatable objects are read as they are (no relocations applied).
func (f *File) DWARF() (dw *DWARF, err error) {
	defer catch(&err)
	idx := map[string]int{}
	for i, s := range f.Sections {
		name, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			name, ok = strings.CutPrefix(s.Name, ".zdebug_")
		}
		if _, seen := idx[name]; ok && !seen {
			idx[name] = i
		}
	}
	if _, ok := idx["info"]; !ok {
		return nil, nil
	}
	if _, ok := idx["line"]; !ok {
		return nil, nil
	}
	// Every size first: a file over its bound reads nothing.
	var total uint64
	for _, n := range dwarfSections {
		if i, ok := idx[n]; ok {
			sz, err := f.Size(i)
			if err != nil {
				return nil, err
			}
			if f.lim.Section > 0 && sz > f.lim.Section {
				what := "section " + f.Sections[i].Name
				if sz != f.Sections[i].FileSize {
					what += ", decompressed"
				}
				return nil, &LimitError{What: what, Size: sz, Bound: f.lim.Section, Of: "one section"}
			}
			total += sz
		}
	}
	if f.lim.File > 0 && f.read+total > f.lim.File {
		return nil, &LimitError{What: "the DWARF sections, decompressed, with what was read before", Size: f.read + total, Bound: f.lim.File, Of: "one file"}
	}
	data := map[string][]byte{}
	for _, n := range dwarfSections {
		if i, ok := idx[n]; ok {
			if data[n], err = f.Data(i); err != nil {
				return nil, err
			}
		}
	}
	units, err := checkUnits(data["info"], data["abbrev"], f.ByteOrder)
	if err != nil {
		return nil, fmt.Errorf("DWARF: %w", err)
	}
	d, err := dwarf.New(data["abbrev"], nil, nil, data["info"], data["line"], nil, data["ranges"], data["str"])
	if err != nil {
		return nil, fmt.Errorf("DWARF: %w", err)
	}
	for _, n := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := data[n]; b != nil {
			if err := d.AddSection(".debug_"+n, b); err != nil {
				return nil, fmt.Errorf("DWARF: %w", err)
			}
		}
	}
	return &DWARF{Data: d, Units: units}, nil
}

// maxAbbrevBytes bounds the abbreviation tables the units use, together:
// debug/dwarf keeps each entry in a map, some twenty times its bytes (a
// distribution's libc uses 1 MB of them).
const maxAbbrevBytes = 16 << 20

// checkUnits walks the unit headers of .debug_info as debug/dwarf will,
// and refuses what would make it costly: more than MaxUnits units, a unit
// whose abbreviations start inside another unit's table (debug/dwarf
// parses each table from where a unit says it starts to its end: a start
// in the middle of a table makes every unit parse to the end of the
// section), or more than maxAbbrevBytes of tables. It returns where each
// unit's first entry is.
func checkUnits(info, abbrev []byte, bo binary.ByteOrder) ([]dwarf.Offset, error) {
	var units []dwarf.Offset
	tables := map[uint64]bool{} // where the units' tables start: found yet
	for off := uint64(0); off < uint64(len(info)); {
		if len(units) >= MaxUnits {
			return nil, &LimitError{What: "compilation units", Size: uint64(len(units)) + 1, Bound: MaxUnits, BoundIsCount: true}
		}
		rest := info[off:]
		if len(rest) < 4 {
			break // debug/dwarf finds no unit there
		}
		n, hdr, is64 := uint64(bo.Uint32(rest)), uint64(4), false
		if n == 0xffffffff {
			if len(rest) < 12 {
				return nil, errors.New("a unit header past the end of .debug_info")
			}
			n, hdr, is64 = bo.Uint64(rest[4:]), 12, true
		} else if n >= 0xfffffff0 {
			return nil, fmt.Errorf("a unit length 0x%x at 0x%x", n, off)
		}
		if n == 0 {
			off += hdr
			continue
		}
		if n > uint64(len(rest))-hdr {
			return nil, fmt.Errorf("the unit at 0x%x claims %d bytes, more than .debug_info has", off, n)
		}
		u := rest[hdr : hdr+n]
		short := fmt.Errorf("the unit at 0x%x is too short for its header", off)
		if len(u) < 2 {
			return nil, short
		}
		vers := bo.Uint16(u)
		if vers < 2 || vers > 5 {
			return nil, fmt.Errorf("the unit at 0x%x: DWARF version %d", off, vers)
		}
		p, w, utype := 2, 4, byte(0)
		if is64 {
			w = 8
		}
		if vers >= 5 {
			if len(u) < p+2 {
				return nil, short
			}
			utype = u[p]
			p += 2 // unit type, address size
		}
		if len(u) < p+w {
			return nil, short
		}
		var ab uint64
		if is64 {
			ab = bo.Uint64(u[p:])
		} else {
			ab = uint64(bo.Uint32(u[p:]))
		}
		p += w
		if vers < 5 {
			p++ // address size
		}
		switch utype {
		case 4, 5: // DW_UT_skeleton, DW_UT_split_compile: the unit's id
			p += 8
		case 2, 6: // DW_UT_type, DW_UT_split_type: signature and offset
			p += 8 + w
		}
		if ab < uint64(len(abbrev)) { // past the end, debug/dwarf reads an empty table
			tables[ab] = false
		}
		units = append(units, dwarf.Offset(off+hdr+uint64(p)))
		off += hdr + n
	}
	used, err := walkTables(abbrev, tables)
	if err != nil {
		return nil, err
	}
	if used > maxAbbrevBytes {
		return nil, &LimitError{What: "the units' abbreviation tables", Size: used, Bound: maxAbbrevBytes, Of: "abbreviations"}
	}
	for ab, found := range tables {
		if !found {
			return nil, fmt.Errorf("a unit takes its abbreviations from 0x%x of .debug_abbrev, which starts no table", ab)
		}
	}
	return units, nil
}

// walkTables reads .debug_abbrev from its start, table after table: each
// is entries (a code, a tag, a children byte, attribute and form pairs
// ending in 0 0) ending in code 0. It marks the starts in want it meets,
// and sums the bytes of the tables that start there. A malformed entry
// ends the walk.
func walkTables(abbrev []byte, want map[uint64]bool) (used uint64, err error) {
	p := 0
	uleb := func() (uint64, bool) {
		var v uint64
		for shift := 0; p < len(abbrev); shift += 7 {
			c := abbrev[p]
			p++
			if shift < 64 {
				v |= uint64(c&0x7f) << shift
			}
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	table := func() bool {
		for {
			code, ok := uleb()
			if !ok {
				return false
			}
			if code == 0 {
				return true
			}
			if _, ok := uleb(); !ok { // tag
				return false
			}
			if p++; p > len(abbrev) { // children
				return false
			}
			for {
				attr, ok1 := uleb()
				form, ok2 := uleb()
				if !ok1 || !ok2 {
					return false
				}
				if attr == 0 && form == 0 {
					break
				}
				if form == 0x21 { // DW_FORM_implicit_const: a signed LEB128 follows
					if _, ok := uleb(); !ok {
						return false
					}
				}
			}
		}
	}
	for p < len(abbrev) {
		start := p
		_, wanted := want[uint64(start)]
		ok := table()
		if wanted {
			want[uint64(start)] = true
			used += uint64(p - start)
		}
		if !ok {
			break
		}
	}
	return used, nil
}
