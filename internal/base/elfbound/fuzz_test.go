package elfbound

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpen: an ELF file with a section claiming any size (compressed, or
// in a hole of the file), or any bytes at all, is read within the bounds
// whatever it says: no section read is larger than the bound of one, the
// file's reads add up to no more than the bound of one file, and nothing
// panics.
func FuzzOpen(f *testing.F) {
	// The bombs: a zlib stream of zeros under a 4 GiB claim, a 1.5 GiB hole
	// named .debug_info, a compressed names table claiming 3 GiB.
	f.Add(uint8(0), uint64(4<<30), zeros(f, 1<<20), []byte(nil))
	f.Add(uint8(1), uint64(3<<29), []byte(nil), []byte(nil))
	f.Add(uint8(2), uint64(3<<30), []byte(nil), []byte(nil))
	f.Add(uint8(0), uint64(64), zeros(f, 64), []byte(nil))
	if data, err := os.ReadFile("/proc/self/exe"); err == nil {
		f.Add(uint8(3), uint64(0), []byte(nil), data[:min(len(data), 8192)])
	}
	dir := f.TempDir()
	lim := Limits{Section: 1 << 20, File: 2 << 20, Time: 5 * time.Second}
	f.Fuzz(func(t *testing.T, mode uint8, claim uint64, payload, raw []byte) {
		var p string
		switch mode % 4 {
		case 0: // a compressed .dynsym and .debug_info
			p = buildELF(t, dir, []sec{
				{name: ".dynstr", typ: elf.SHT_STRTAB, data: []byte("\x00a\x00")},
				{name: ".dynsym", typ: elf.SHT_DYNSYM, flags: elf.SHF_COMPRESSED, link: 2, data: payload, claim: claim},
				{name: ".debug_info", typ: elf.SHT_PROGBITS, flags: elf.SHF_COMPRESSED, data: payload, claim: claim},
				{name: ".debug_line", typ: elf.SHT_PROGBITS, data: payload},
			})
		case 1: // .debug_info in a hole, bounded to 4 GiB so the file stays sparse
			p = buildELF(t, dir, []sec{
				{name: ".debug_info", typ: elf.SHT_PROGBITS, hole: 1 + claim%(4<<30)},
				{name: ".debug_abbrev", typ: elf.SHT_PROGBITS, data: payload},
				{name: ".debug_line", typ: elf.SHT_PROGBITS, data: payload},
			})
		case 2: // a compressed names table
			p = buildELF(t, dir, []sec{{name: ".shstrtab", typ: elf.SHT_STRTAB, flags: elf.SHF_COMPRESSED, claim: claim}})
		default: // any bytes
			p = filepath.Join(dir, "raw")
			if err := os.WriteFile(p, raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		file, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		st, _ := file.Stat()
		ef, err := Open(file, st.Size(), lim)
		if err != nil {
			return
		}
		for i, s := range ef.Sections {
			b, err := ef.Data(i)
			if err == nil && uint64(len(b)) > lim.Section {
				t.Fatalf("section %s: %d bytes read, over the bound", s.Name, len(b))
			}
			if s.Type == elf.SHT_SYMTAB || s.Type == elf.SHT_DYNSYM {
				ef.Symbols(i)
			}
		}
		if d, err := ef.DWARF(); err == nil && d != nil {
			r := d.Reader()
			for _, u := range d.Units {
				r.Seek(u)
				if e, err := r.Next(); err == nil && e != nil {
					d.Ranges(e)
					d.LineReader(e)
				}
			}
		}
		if ef.Read() > lim.File {
			t.Fatalf("%d bytes read of one file, over the bound", ef.Read())
		}
	})
}
