package elfbound

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
)

// sec and buildELF are elftest's, in short.
type sec struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
	link  uint32
	data  []byte
	hole  uint64
	claim uint64
}

func buildELF(t testing.TB, dir string, secs []sec) string {
	t.Helper()
	var f elftest.File
	for _, s := range secs {
		f.Sections = append(f.Sections, elftest.Section{Name: s.name, Type: s.typ, Flags: s.flags, Link: s.link, Data: s.data, Hole: s.hole, Claim: s.claim})
	}
	return f.Write(t, dir, "elf")
}

func zeros(t testing.TB, n uint64) []byte { return elftest.Zeros(t, n) }

// openELF opens path within lim.
func openELF(t testing.TB, path string, lim Limits) *File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	ef, err := Open(f, st.Size(), lim)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ef
}
