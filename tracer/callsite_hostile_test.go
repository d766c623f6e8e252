package tracer

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/base/elfbound"
	"github.com/rdmatrace/rdmatrace/internal/base/elfbound/elftest"
	"github.com/rdmatrace/rdmatrace/internal/host/symbolize"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// mapperEnv makes the test binary a process whose memory map names a
// libibverbs of the test's choosing (TestHelperMapper): "DIR MODE SRC
// [TARGET]".
const mapperEnv = "RDMATRACE_TEST_MAPPER"

// TestHelperMapper is not a test: it is the process startMapper runs. It
// copies SRC to DIR/libibverbs.so.1 and maps it executable; then, by MODE:
// map keeps it; fifo deletes it and makes a FIFO named as the maps line
// now names it ("... (deleted)"); link deletes it and leaves there a
// symbolic link to TARGET. It prints the maps line, then waits for its
// stdin to close.
func TestHelperMapper(t *testing.T) {
	v, ok := os.LookupEnv(mapperEnv)
	if !ok {
		t.Skip("the helper process of the library scan's tests")
	}
	a := strings.Fields(v)
	dir, mode, src := a[0], a[1], a[2]
	p := filepath.Join(dir, "libibverbs.so.1")
	fail := func(err error) { fmt.Println("error", err); os.Exit(1) }
	data, err := os.ReadFile(src)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(p, data, 0o755); err != nil {
		fail(err)
	}
	f, _ := os.Open(p)
	if _, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE); err != nil {
		fail(err)
	}
	f.Close()
	shown := p
	if mode != "map" {
		os.Remove(p)
		shown = p + " (deleted)"
	}
	switch mode {
	case "fifo":
		err = unix.Mkfifo(shown, 0o666)
	case "link":
		err = os.Symlink(a[3], shown)
	}
	if err != nil {
		fail(err)
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.Contains(l, "libibverbs.so.1") {
			fmt.Println(l)
			break
		}
	}
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// mapper is a running TestHelperMapper.
type mapper struct {
	pid int
	ino uint64
}

func startMapper(t *testing.T, dir, mode, src string, target ...string) mapper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMapper$")
	cmd.Env = append(os.Environ(), mapperEnv+"="+strings.Join(append([]string{dir, mode, src}, target...), " "))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	l, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.HasPrefix(l, "error") {
		t.Fatalf("the mapper: %q %v", l, err)
	}
	var m mapper
	m.pid = cmd.Process.Pid
	var rng, perms, off, dev string
	if _, err := fmt.Sscan(l, &rng, &perms, &off, &dev, &m.ino); err != nil {
		t.Fatalf("the mapper's maps line %q: %v", l, err)
	}
	return m
}

// needMapFiles skips where /proc/PID/map_files cannot be read (it needs
// CAP_SYS_ADMIN).
func needMapFiles(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("reading another process's /proc/PID/map_files needs root")
	}
}

// scanFor runs the library scan over every process and keeps what it
// found of pid's; it fails the test if the scan takes more than a few
// seconds (a FIFO's open waits forever).
func scanFor(t *testing.T, pid int) (files []libraryFile, problems []string) {
	t.Helper()
	done := make(chan struct{})
	var all []libraryFile
	var probs []string
	go func() { all, probs = findLibraries(nil, "/proc", true); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the library scan is still running after 20 s")
	}
	tag := fmt.Sprintf("(mapped by pid %d)", pid)
	for _, f := range all {
		if strings.Contains(f.name, tag) {
			files = append(files, f)
		} else {
			f.f.Close()
		}
	}
	for _, p := range probs {
		if strings.Contains(p, tag) {
			problems = append(problems, p)
		}
	}
	return files, problems
}

func inode(t *testing.T, f *os.File) uint64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// What a process's maps name is its user's to shape: a deleted library's
// name may now be a FIFO, a link to a device, or a link to another
// library. The scan opens the file mapped (/proc/PID/map_files), never
// the name: no wait on the FIFO, no open of what a link leads to.
func TestTheLibraryScanOpensTheFileMappedNotItsName(t *testing.T) {
	needMapFiles(t)
	lib, _, _ := buildCallsiteProgram(t)
	other := filepath.Join(t.TempDir(), "other.so")
	data, _ := os.ReadFile(lib)
	os.WriteFile(other, data, 0o644)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode   string
		target []string
	}{
		{"map", nil},
		{"fifo", nil},
		{"link", []string{fifo}},
		{"link", []string{"/dev/null"}},
		{"link", []string{other}},
	} {
		t.Run(strings.Join(append([]string{c.mode}, c.target...), " "), func(t *testing.T) {
			m := startMapper(t, t.TempDir(), c.mode, lib, c.target...)
			files, probs := scanFor(t, m.pid)
			if len(files) != 1 || len(probs) != 0 {
				t.Fatalf("found %d files of the mapper, problems %q; want its one library", len(files), probs)
			}
			defer files[0].f.Close()
			if ino := inode(t, files[0].f); ino != m.ino {
				t.Errorf("opened inode %d, want the mapped %d", ino, m.ino)
			}
		})
	}
	// No reader ever opened the FIFOs.
	if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); !errors.Is(err, unix.ENXIO) {
		unix.Close(fd)
		t.Errorf("a writer of the FIFO a link led to: %v, want ENXIO (never opened for reading)", err)
	}
}

// The library probed is the library parsed: with the mapped file's name
// now a link to another copy, the probes are on the mapped inode.
func TestALibraryIsProbedThroughTheFileParsed(t *testing.T) {
	needMapFiles(t)
	lib, _, _ := buildCallsiteProgram(t)
	other := filepath.Join(t.TempDir(), "other.so")
	data, _ := os.ReadFile(lib)
	os.WriteFile(other, data, 0o644)
	m := startMapper(t, t.TempDir(), "link", lib, other)
	c := openCallSitesWith(t, CallSiteOptions{noDirs: true})
	t.Cleanup(c.Close)
	var st unix.Stat_t
	unix.Stat(other, &st)
	mapped := 0
	for k, fn := range c.probedAt {
		if k.ino == st.Ino {
			t.Errorf("%s probed in the link's target (inode %d), not the mapped file", fn, k.ino)
		}
		if k.ino == m.ino {
			mapped++
		}
	}
	if mapped == 0 {
		t.Errorf("nothing probed in the mapped file (inode %d): %q, problems %q", m.ino, c.Probed, c.Problems)
	}
}

// hostileLibrary writes a library whose .dynsym is dynsym (entries after
// the null one) with .dynstr strs, a .text of 4 KiB and a .data.
func hostileLibrary(t *testing.T, dynsym elftest.Section, strs string) (string, *os.File) {
	t.Helper()
	// .text first: at the same place whatever the symbols.
	dynsym.Name, dynsym.Type, dynsym.Link = ".dynsym", elf.SHT_DYNSYM, 4
	p := elftest.File{Sections: []elftest.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Data: make([]byte, 4096)},
		{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Data: make([]byte, 64)},
		{Name: ".dynstr", Type: elf.SHT_STRTAB, Data: []byte(strs)},
		dynsym,
	}}.Write(t, t.TempDir(), "libibverbs.so.1")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return p, f
}

// textAt is where hostileLibrary's .text is: its section header's address.
func textAt(t *testing.T, p string) (addr uint64, shndx uint16) {
	ef, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for i, s := range ef.Sections {
		if s.Name == ".text" {
			return s.Addr, uint16(i)
		}
	}
	t.Fatal("no .text")
	return
}

// attachOnly runs attachLibrary's checks on f, which refuse it before any
// probe: what it says.
func attachOnly(t *testing.T, p string, f *os.File) (bool, []string) {
	c := newCallSites(t.TempDir())
	t.Cleanup(c.sym.Close)
	id, size, err := identity(f)
	if err != nil {
		t.Fatal(err)
	}
	ok := c.attachLibrary(f, p, id, size, elfbound.NewBudget(scanTotal))
	return ok, c.Problems
}

// A library that names a probed function 301 times (the review's decoys:
// the last at an offset the user chose) is refused whole; so is one whose
// probed function is not in its code.
func TestDecoySymbolsRefuseTheLibrary(t *testing.T) {
	const strs = "\x00ibv_alloc_pd\x00"
	p, _ := hostileLibrary(t, elftest.Section{Data: make([]byte, 24)}, strs) // where .text is
	text, shndx := textAt(t, p)
	var decoys []byte
	decoys = append(decoys, make([]byte, 24)...)
	for i := range 301 {
		decoys = append(decoys, elftest.Sym(1, elf.STT_FUNC, shndx, text+uint64(i%256)*16, 8)...)
	}
	p, f := hostileLibrary(t, elftest.Section{Data: decoys}, strs)
	if ok, probs := attachOnly(t, p, f); ok || len(probs) != 1 || !strings.Contains(probs[0], "301 symbols named ibv_alloc_pd") {
		t.Errorf("301 decoys: probed %v, problems %q", ok, probs)
	}
	data := append(make([]byte, 24), elftest.Sym(1, elf.STT_FUNC, shndx+1, text+4096+16, 8)...) // in .data
	p, f = hostileLibrary(t, elftest.Section{Data: data}, strs)
	if ok, probs := attachOnly(t, p, f); ok || len(probs) != 1 || !strings.Contains(probs[0], "holds no code") {
		t.Errorf("a function in .data: probed %v, problems %q", ok, probs)
	}
}

// A libibverbs whose .dynsym decompresses to 256 MiB (the review's went
// to 4 GiB: 1.9 GB of memory, then the OOM killer) is refused by the size
// it claims, in little memory, with a line naming it.
func TestADynsymBombIsRefusedInLittleMemory(t *testing.T) {
	const claim = 256 << 20
	p, f := hostileLibrary(t, elftest.Section{Flags: elf.SHF_COMPRESSED, Claim: claim, Data: elftest.Zeros(t, claim)}, "\x00ibv_alloc_pd\x00")
	var ok bool
	var probs []string
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	ok, probs = attachOnly(t, p, f)
	runtime.ReadMemStats(&b)
	if n := b.TotalAlloc - a.TotalAlloc; n > 32<<20 {
		t.Errorf("refusing it allocated %d MiB", n>>20)
	}
	if ok || len(probs) != 1 || !strings.Contains(probs[0], p) || !strings.Contains(probs[0], "section .dynsym, decompressed: 256 MiB, over the bound of 16 MiB") {
		t.Errorf("probed %v, problems %q", ok, probs)
	}
}

// A binary whose names are slow to read (here: never read) holds up the
// first create of its stack for the join's wait at most, and no create
// after: the event loop is not stalled by a hostile binary; the create
// is placed by offset, and a line says why.
func TestASlowBinaryStallsOneCreateAtMost(t *testing.T) {
	_, prog, _ := buildCallsiteProgram(t)
	c := joinOnly(t)
	c.wait = 300 * time.Millisecond
	f, err := os.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.sym.OpenFile(f, prog) // its names never asked for: as slow as can be
	if err != nil {
		t.Fatal(err)
	}
	st := &pendingStack{raw: &rdma.CallStack{Frames: []rdma.CallFrame{{Binary: prog, Offset: 0x1139}}}, bins: []*symbolize.Binary{b}, done: make(chan struct{})}
	c.threads[7] = &threadCalls{calls: []call{{entry: 10, sp: 1000, stack: st}}}
	for i, max := range []time.Duration{2 * c.wait, c.wait / 3, c.wait / 3} {
		e := rdma.Event{Kind: rdma.EvCreate, Flags: rdma.EvUser, Resource: rdma.Resource{Type: rdma.ResQP}, Actor: rdma.Owner{TID: 7}, Mono: 20 + uint64(i)}
		start := time.Now()
		c.Annotate(&e)
		if d := time.Since(start); d > max {
			t.Errorf("create %d waited %v, want at most %v", i, d, max)
		}
		if e.Stack == nil || e.Stack.Site().Binary != prog || e.Stack.Site().Func != "" {
			t.Errorf("create %d: stack %+v, want placed by offset in %s", i, e.Stack, prog)
		}
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], prog) || !strings.Contains(w[0], "not read within") {
		t.Errorf("warnings %q, want one line naming %s", w, prog)
	}
}

// What the scan refused is said without -v: the first few lines, then
// how many more; -v lists all. (300 failed uprobes once passed in
// silence.)
func TestStacksProblemsAreSaidWithoutVerbose(t *testing.T) {
	c := newCallSites(t.TempDir())
	t.Cleanup(c.sym.Close)
	for i := range 5 {
		c.problem(fmt.Sprintf("/tmp/x%d/libibverbs.so.1: not an ELF file: not probed", i))
	}
	c.Probed = []string{"/usr/lib/libibverbs.so.1: ibv_alloc_pd"}
	for _, verbose := range []bool{false, true} {
		var out strings.Builder
		stacksAttached(&Tracer{CallSites: c}, verbose, &out)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{"rdmatrace: --stacks: /tmp/x0/libibverbs.so.1: not an ELF file: not probed", "rdmatrace: --stacks: /tmp/x1/libibverbs.so.1: not an ELF file: not probed",
			"rdmatrace: --stacks: /tmp/x2/libibverbs.so.1: not an ELF file: not probed", "rdmatrace: --stacks: 2 more problems (-v lists them)"}
		if verbose {
			want = []string{"rdmatrace: --stacks probes /usr/lib/libibverbs.so.1: ibv_alloc_pd"}
			for i := range 5 {
				want = append(want, fmt.Sprintf("rdmatrace: --stacks: /tmp/x%d/libibverbs.so.1: not an ELF file: not probed", i))
			}
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("verbose %v:\n%s\nwant\n%s", verbose, out.String(), strings.Join(want, "\n"))
		}
	}
}

// Under -- CMD (ForProgram) the probes see the program's cgroup alone:
// other processes' maps are not read at all.
func TestAProgramsScanReadsNoOtherProcess(t *testing.T) {
	needMapFiles(t)
	lib, _, _ := buildCallsiteProgram(t)
	startMapper(t, t.TempDir(), "fifo", lib)
	files, probs := findLibraries(nil, "/proc", false)
	if len(files) != 0 || len(probs) != 0 {
		t.Errorf("without the process scan: %d files, problems %q", len(files), probs)
	}
}
