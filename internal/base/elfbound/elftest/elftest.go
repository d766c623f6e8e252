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

// Zeros is a zlib stream of n zero bytes (n > 0), as small as zlib's own
// (4 GiB in 4 MB) and made at once: one deflate block whose codes are a
// literal 0 (2 bits), the end (2 bits) and a match of 258 bytes at
// distance 1 (2 bits: 1 for the length, 1 for the distance).
func Zeros(t testing.TB, n uint64) []byte {
	t.Helper()
	if n == 0 {
		t.Fatal("elftest.Zeros: no bytes")
	}
	var w bitWriter
	w.b = append(w.b, 0x78, 0x01) // zlib: deflate, 32 KiB window
	w.bits(1, 1)                  // BFINAL
	w.bits(2, 2)                  // BTYPE 10: codes in the block
	w.bits(286-257, 5)            // HLIT: literal/length codes up to 285
	w.bits(1-1, 5)                // HDIST: one distance code
	w.bits(18-4, 4)               // HCLEN: code length codes, in their order up to 1
	// The code length code's lengths, in RFC 1951's order (16, 17, 18, 0,
	// 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1): 18 is 1 bit (0), 1
	// and 2 are 2 bits (10, 11).
	for _, l := range []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2} {
		w.bits(l, 3)
	}
	// The lengths: literal 0 is 2 bits, 1-255 none, end (256) 2 bits,
	// 257-284 none, 285 (length 258) 1 bit; distance 0 1 bit.
	two, one, zeros := func() { w.code(3, 2) }, func() { w.code(2, 2) }, func(k uint64) { w.code(0, 1); w.bits(k-11, 7) }
	two()
	zeros(138)
	zeros(117)
	two()
	zeros(28)
	one()
	one()
	// So: 285 is 0, literal 0 is 10, the end 11; distance 0 is 0.
	w.code(2, 2)
	w.zeros(2 * ((n - 1) / 258)) // each: length 258 (0), distance 1 (0)
	for i := uint64(0); i < (n-1)%258; i++ {
		w.code(2, 2)
	}
	w.code(3, 2)
	w.flush()
	// Adler-32 of n zeros: a stays 1, b adds a n times.
	adler := uint32((n%65521)<<16 | 1)
	return binary.BigEndian.AppendUint32(w.b, adler)
}

// bitWriter packs deflate's bits: fields least significant bit first,
// Huffman codes most significant bit first.
type bitWriter struct {
	b    []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.b = append(w.b, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := uint(0); i < n; i++ {
		r = r<<1 | (c>>i)&1
	}
	w.bits(r, n)
}

// zeros writes n zero bits: whole bytes at once.
func (w *bitWriter) zeros(n uint64) {
	for n > 0 && w.nacc != 0 {
		w.bits(0, 1)
		n--
	}
	w.b = append(w.b, make([]byte, n/8)...)
	w.bits(0, uint(n%8))
}

func (w *bitWriter) flush() {
	if w.nacc > 0 {
		w.bits(0, 8-w.nacc)
	}
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
