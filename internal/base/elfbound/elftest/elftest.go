// Package elftest writes small ELF files for tests: the hostile ones
// (sections that decompress to gigabytes, sections in a hole of a sparse
// file, symbol tables with decoys) and plain ones, little-endian ELF64
// for x86-64.
package elftest

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Section is a section of a test file.
type Section struct {
	Name  string
	Type  elf.SectionType
	Flags elf.SectionFlag
	Link  uint32
	// Addr is its address; an SHF_ALLOC section without one gets its
	// file offset (the file is loaded at 0).
	Addr uint64
	Data []byte
	// Hole, when set, is the section's size in a hole at the end of the
	// (sparse) file, in place of Data.
	Hole uint64
	// Claim, with SHF_COMPRESSED, is the size the compression header
	// claims: Data is then the zlib stream.
	Claim uint64
}

// File is a test file: its type, and its sections after the null one and
// .shstrtab (section 1). A first section named .shstrtab sets that
// section's flags and Claim (compressed, its data is the names
// compressed). One PT_LOAD, readable and executable, maps the file from
// offset 0 at address 0.
type File struct {
	Type     elf.Type // ET_DYN when 0
	Sections []Section
}

// Zeros is a zlib stream of n zero bytes (256 MiB: 330 KB, 0.4 s).
func Zeros(t testing.TB, n uint64) []byte {
	t.Helper()
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestSpeed)
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, uint64(len(chunk)))
		w.Write(chunk[:k])
		n -= k
	}
	w.Close()
	return b.Bytes()
}

// Sym is an ELF64 symbol's bytes.
func Sym(name uint32, typ elf.SymType, shndx uint16, value, size uint64) []byte {
	b := make([]byte, elf.Sym64Size)
	le := binary.LittleEndian
	le.PutUint32(b, name)
	b[4] = byte(elf.STB_GLOBAL)<<4 | byte(typ)
	le.PutUint16(b[6:], shndx)
	le.PutUint64(b[8:], value)
	le.PutUint64(b[16:], size)
	return b
}

// Write writes the file as name in dir and returns its path.
func (f File) Write(t testing.TB, dir, name string) string {
	t.Helper()
	le := binary.LittleEndian
	names := Section{Name: ".shstrtab", Type: elf.SHT_STRTAB}
	secs := f.Sections
	if len(secs) > 0 && secs[0].Name == ".shstrtab" {
		names, secs = secs[0], secs[1:]
	}
	shstr := []byte("\x00.shstrtab\x00")
	nameOff := map[string]uint32{".shstrtab": 1}
	for _, s := range secs {
		if _, ok := nameOff[s.Name]; !ok {
			nameOff[s.Name] = uint32(len(shstr))
			shstr = append(append(shstr, s.Name...), 0)
		}
	}
	names.Data = shstr
	if names.Flags&elf.SHF_COMPRESSED != 0 {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(shstr)
		w.Close()
		names.Data = z.Bytes()
	}
	all := append([]Section{names}, secs...)
	var body bytes.Buffer
	body.Write(make([]byte, 64+56))
	offs := make([]uint64, len(all))
	sizes := make([]uint64, len(all))
	for i, s := range all {
		for body.Len()%16 != 0 {
			body.WriteByte(0)
		}
		offs[i] = uint64(body.Len())
		d := s.Data
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			var ch [24]byte
			le.PutUint32(ch[0:], uint32(elf.COMPRESS_ZLIB))
			le.PutUint64(ch[8:], s.Claim)
			le.PutUint64(ch[16:], 1)
			d = append(ch[:], d...)
		}
		body.Write(d)
		sizes[i] = uint64(len(d))
	}
	for body.Len()%16 != 0 {
		body.WriteByte(0)
	}
	shoff := uint64(body.Len())
	end := shoff + uint64(len(all)+1)*64
	holeAt := (end + 4095) &^ 4095
	fileEnd := end
	sh := make([]byte, 64) // the null section
	for i, s := range all {
		off, size := offs[i], sizes[i]
		if s.Hole > 0 {
			off, size = holeAt, s.Hole
			holeAt += (s.Hole + 4095) &^ 4095
			fileEnd = holeAt
		}
		addr := s.Addr
		if addr == 0 && s.Flags&elf.SHF_ALLOC != 0 {
			addr = off
		}
		var h [64]byte
		le.PutUint32(h[0:], nameOff[s.Name])
		le.PutUint32(h[4:], uint32(s.Type))
		le.PutUint64(h[8:], uint64(s.Flags))
		le.PutUint64(h[16:], addr)
		le.PutUint64(h[24:], off)
		le.PutUint64(h[32:], size)
		le.PutUint32(h[40:], s.Link)
		le.PutUint64(h[48:], 1)
		if s.Type == elf.SHT_SYMTAB || s.Type == elf.SHT_DYNSYM {
			le.PutUint32(h[44:], 1) // the first global symbol
			le.PutUint64(h[56:], elf.Sym64Size)
		}
		sh = append(sh, h[:]...)
	}
	body.Write(sh)
	b := body.Bytes()
	typ := f.Type
	if typ == 0 {
		typ = elf.ET_DYN
	}
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	le.PutUint16(b[16:], uint16(typ))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], 64) // phoff
	le.PutUint64(b[40:], shoff)
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], 1)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], uint16(len(all)+1))
	le.PutUint16(b[62:], 1)
	ph := b[64:]
	le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
	le.PutUint32(ph[4:], uint32(elf.PF_R|elf.PF_X))
	le.PutUint64(ph[32:], fileEnd)
	le.PutUint64(ph[40:], fileEnd)
	le.PutUint64(ph[48:], 4096)
	p := filepath.Join(dir, name)
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := out.Truncate(int64(fileEnd)); err != nil {
		t.Fatal(err)
	}
	return p
}
