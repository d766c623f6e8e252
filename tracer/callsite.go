package tracer

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/base/elfbound"
	"github.com/rdmatrace/rdmatrace/internal/host/safeopen"
	"github.com/rdmatrace/rdmatrace/internal/host/symbolize"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// ProbedFuncs are the library functions whose callers --stacks names:
// libibverbs' and librdmacm's exported functions that create what the
// kernel tracks. ibv_create_qp_ex, ibv_create_cq_ex, ibv_create_srq_ex and
// ibv_alloc_mw are inline in verbs.h (they call the provider directly:
// no exported function to probe), and ibv_reg_mr is a macro around an
// inline that calls ibv_reg_mr or ibv_reg_mr_iova2, which are probed.
var ProbedFuncs = []string{
	"ibv_open_device", "ibv_alloc_pd", "ibv_create_cq", "ibv_create_qp", "ibv_create_srq",
	"ibv_reg_mr", "ibv_reg_mr_iova", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr",
	"rdma_create_id", "rdma_create_ep", "rdma_create_qp", "rdma_create_qp_ex",
	"rdma_create_srq", "rdma_create_srq_ex",
}

// libraryNames are the files ProbedFuncs are looked for in, where the
// dynamic linker finds them.
var libraryNames = []string{"libibverbs.so.1", "librdmacm.so.1"}

// libraryDirs are the dynamic linker's default directories (Debian's
// multiarch ones first).
func libraryDirs() []string {
	multi := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return []string{"/usr/lib/" + multi, "/lib/" + multi, "/usr/lib64", "/lib64", "/usr/lib", "/lib", "/usr/local/lib"}
}

// CallSiteOptions choose what --stacks probes.
type CallSiteOptions struct {
	// Libraries are probed in addition to libibverbs and librdmacm where
	// the dynamic linker finds them and where running processes map them.
	Libraries []string
	// NoDefault probes only Libraries (tests).
	NoDefault bool
	// ForProgram says the probes follow a program the session starts
	// (leaks -- CMD, trace -- CMD: the program's cgroup alone): the
	// libraries are those the dynamic linker finds, which the program
	// maps; the processes already running are not read for theirs.
	ForProgram bool
	// ProcRoot is /proc (tests may point elsewhere).
	ProcRoot string
	// plain loads the entry program without bpf_find_vma, as on kernels
	// before 5.17 (tests); noDirs reads the processes' libraries alone.
	plain, noDirs bool
}

// CallSites finds where in a program each user object was created: the
// uprobes of bpf/callsite.bpf.c bracket each call of a ProbedFuncs
// function with the caller's stack; Annotate gives a create the stack of
// the call its thread was in. A goroutine reads the probes' ring and
// places the addresses at once, while the process still runs (its
// mappings, its files, opened as mapped); the names are read from those
// files in the background, within bounds (internal/host/symbolize).
type CallSites struct {
	coll   *ebpf.Collection
	enter  *ebpf.Program // callsite_enter_vma where the kernel takes it
	links  []link.Link
	reader *ringbuf.Reader
	sym    *symbolize.Symbolizer
	proc   string
	// Probed names what is probed ("libibverbs.so.1.14.44.0: ibv_alloc_pd ...");
	// Problems what could not be, a line a file.
	Probed, Problems []string
	probedAt         map[probeKey]string  // (file, offset) -> function
	probedIno        map[[2]uint64]string // (inode, offset) -> function: for the kernel's word at the call

	mu      sync.Mutex
	cond    *sync.Cond
	threads map[uint32]*threadCalls
	busy    bool // the reader holds a record it has not applied yet
	done    bool
	readErr error                    // what ended the reader, other than Close
	cmids   map[uint64]*pendingStack // unbound rdma_cm IDs' stacks, for their later bind
	procs   map[uint32]*procMaps
	wg      sync.WaitGroup
	naming  int           // stacks being named in the background
	wait    time.Duration // joinWait (tests: shorter)
	// known are files by inode, from what was probed, what processes
	// mapped and the programs started: where a frame's file is found
	// once its process has exited. Only the reader touches it after
	// OpenCallSites (AddProgram holds mu).
	known map[uint64][]string

	warnings
}

type probeKey struct {
	dev, ino uint64
	off      uint64
}

// threadCalls are a thread's recent probed calls, in order of entry.
type threadCalls struct {
	calls []call
	last  uint64
}

// call is one probed call: entered at entry, returned at exit (0: not
// yet), with the stack pointer at entry.
type call struct {
	entry, exit, sp uint64
	stack           *pendingStack
}

// pendingStack is a call's stack as placed by the reader (files, offsets,
// build-ids), and as named once the files' names are read.
type pendingStack struct {
	raw  *rdma.CallStack
	bins []*symbolize.Binary // each frame's file, nil for none
	done chan struct{}       // closed once named is set
	// named is raw with the names read; set before done is closed.
	named *rdma.CallStack
}

// stack is the named stack when it is, else the placed one.
func (p *pendingStack) stack() *rdma.CallStack {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.named
	default:
		return p.raw
	}
}

// tryName names each frame from what its file has ready, and says so;
// false, naming nothing, when a frame needs a lookup (or a file's names
// are not read yet).
func (p *pendingStack) tryName() bool {
	if p.raw == nil {
		p.name()
		return true
	}
	frames := append([]rdma.CallFrame(nil), p.raw.Frames...)
	for i := range frames {
		b := p.bins[i]
		if b == nil {
			continue
		}
		f := &frames[i]
		var ok bool
		if f.Func, f.File, f.Line, ok = b.Cached(f.Offset); !ok {
			return false
		}
	}
	st := *p.raw
	st.Frames = frames
	p.named = &st
	close(p.done)
	return true
}

// name names each frame from its file, as far as its names are read.
func (p *pendingStack) name() {
	if p.raw == nil {
		p.named = nil
		close(p.done)
		return
	}
	st := *p.raw
	st.Frames = append([]rdma.CallFrame(nil), p.raw.Frames...)
	for i := range st.Frames {
		if b := p.bins[i]; b != nil && b.Loaded() {
			f := &st.Frames[i]
			f.Func, f.File, f.Line, _ = b.Place(f.Offset)
		}
	}
	p.named = &st
	close(p.done)
}

// Bounds: calls kept per thread (the main ring may be this many calls
// behind the thread), threads kept, rdma_cm IDs kept unbound, stacks
// named at once in the background.
const (
	maxCallsPerThread = 64
	maxThreads        = 1024
	maxUnboundIDs     = 4096
	maxNaming         = 256
	// joinWait bounds how long a create waits for the probes' reader to
	// catch up with it, and for its stack's names: long enough for the
	// first call of a process, whose binaries are read (a distribution's
	// libc with its debug file: a second under the race detector, more
	// under emulation). A binary whose names took longer once is not
	// waited for again.
	joinWait = 5 * time.Second
)

// Bounds of the library scan: each file's dynamic symbols, all files
// together, the files probed, the offsets one probed name may have (a
// real libibverbs has one or two versions of each function).
const (
	scanSection  = 16 << 20
	scanFile     = 64 << 20
	scanTotal    = 256 << 20
	scanTime     = 10 * time.Second
	maxLibraries = 64
	maxVersions  = 4
	maxProblems  = 100
)

// newCallSites is a CallSites without probes or reader.
func newCallSites(proc string) *CallSites {
	if proc == "" {
		proc = "/proc"
	}
	c := &CallSites{sym: symbolize.New(), proc: proc, probedAt: map[probeKey]string{},
		known: map[uint64][]string{}, probedIno: map[[2]uint64]string{},
		threads: map[uint32]*threadCalls{}, cmids: map[uint64]*pendingStack{}, procs: map[uint32]*procMaps{}, wait: joinWait}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// OpenCallSites loads bpf/callsite.bpf.c and attaches its probes to every
// ProbedFuncs function found. It fails when nothing could be probed.
func OpenCallSites(o CallSiteOptions) (*CallSites, error) {
	spec, err := bpf.LoadCallsite()
	if err != nil {
		return nil, err
	}
	enter := "callsite_enter_vma"
	if o.plain {
		delete(spec.Programs, enter)
		enter = "callsite_enter"
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil && !errors.Is(err, os.ErrPermission) && !o.plain {
		// Before Linux 5.17 (bpf_find_vma): the plain entry program.
		delete(spec.Programs, enter)
		enter = "callsite_enter"
		coll, err = ebpf.NewCollection(spec)
	}
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, ErrPrivileges
		}
		return nil, fmt.Errorf("--stacks: load the call-site probes: %w", err)
	}
	c := newCallSites(o.ProcRoot)
	c.coll, c.enter = coll, coll.Programs[enter]
	var libs []libraryFile
	for _, l := range o.Libraries {
		if f, err := safeopen.Regular(l); err != nil {
			c.problem(fmt.Sprintf("%v: not probed", err))
		} else {
			libs = append(libs, libraryFile{f: f, name: l})
		}
	}
	if !o.NoDefault {
		dirs := libraryDirs()
		if o.noDirs {
			dirs = nil
		}
		found, probs := findLibraries(dirs, c.proc, !o.ForProgram)
		libs = append(libs, found...)
		for _, p := range probs {
			c.problem(p)
		}
	}
	seen := map[[2]uint64]bool{}
	budget := elfbound.NewBudget(scanTotal)
	probed := 0
	for _, l := range libs {
		id, size, err := identity(l.f)
		if err != nil || seen[id] {
			l.f.Close() // the same file by another path (/lib is /usr/lib)
			continue
		}
		seen[id] = true
		if probed >= maxLibraries {
			c.problem(fmt.Sprintf("%s: not probed: %d libraries are (the bound)", l.name, maxLibraries))
			l.f.Close()
			continue
		}
		if c.attachLibrary(l.f, l.name, id, size, budget) {
			probed++
		}
		l.f.Close()
	}
	if len(c.links) == 0 {
		c.Close()
		why := "no libibverbs or librdmacm found"
		if len(c.Problems) > 0 {
			why = strings.Join(c.Problems, "; ")
		}
		return nil, fmt.Errorf("--stacks: nothing to probe: %s", why)
	}
	if c.reader, err = ringbuf.NewReader(coll.Maps["callsites"]); err != nil {
		c.Close()
		return nil, fmt.Errorf("--stacks: open the call-site ring: %w", err)
	}
	c.wg.Add(1)
	go c.read()
	return c, nil
}

// problem notes what could not be probed, a bounded number of lines.
func (c *CallSites) problem(p string) {
	switch {
	case len(c.Problems) < maxProblems:
		c.Problems = append(c.Problems, p)
	case len(c.Problems) == maxProblems:
		c.Problems = append(c.Problems, "more problems, not listed")
	}
}

// identity is an open file's device and inode, and its size.
func identity(f *os.File) ([2]uint64, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return [2]uint64{}, 0, err
	}
	return [2]uint64{st.Dev, st.Ino}, st.Size, nil
}

// libraryFile is a library to probe, open: found where the dynamic
// linker looks, or as a process maps it.
type libraryFile struct {
	f    *os.File
	name string
}

// findLibraries opens libibverbs and librdmacm where the dynamic linker
// looks and, with procs, wherever running processes have them mapped (a
// container's own): through /proc/PID/map_files, the file mapped whatever
// its name says (a process's maps are its user's to shape: a deleted
// file's name may now be a FIFO, a device or a link). Problems name what
// was refused.
func findLibraries(dirs []string, proc string, procs bool) (out []libraryFile, problems []string) {
	for _, d := range dirs {
		for _, n := range libraryNames {
			p, err := filepath.EvalSymlinks(filepath.Join(d, n))
			if err != nil {
				continue
			}
			f, err := safeopen.Regular(p)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%v: not probed", err))
				continue
			}
			out = append(out, libraryFile{f: f, name: p})
		}
	}
	if !procs {
		return out, problems
	}
	ents, _ := os.ReadDir(proc)
	seen := map[string]bool{}
	for _, e := range ents {
		pid, err := strconv.ParseUint(e.Name(), 10, 32)
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(proc, e.Name(), "maps"))
		if err != nil {
			continue
		}
		ms, _ := parseMaps(f, f.Name())
		f.Close()
		for _, m := range ms {
			b := strings.TrimSuffix(filepath.Base(m.path), " (deleted)")
			if !isLibraryName(b) || seen[m.dev+" "+strconv.FormatUint(m.ino, 10)] {
				continue
			}
			seen[m.dev+" "+strconv.FormatUint(m.ino, 10)] = true
			name := fmt.Sprintf("%s (mapped by pid %d)", m.path, pid)
			lf, err := safeopen.Mapped(proc, uint32(pid), m.start, m.end, safeopen.Identity{Dev: m.dev, Ino: m.ino})
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v: not probed", name, unwrapPath(err)))
				continue
			}
			out = append(out, libraryFile{f: lf, name: name})
		}
	}
	return out, problems
}

// isLibraryName says whether a file's name is one of libraryNames' (any
// version: libibverbs.so.1.14.44.0).
func isLibraryName(base string) bool {
	for _, n := range libraryNames {
		if strings.HasPrefix(base, strings.TrimSuffix(n, ".1")) {
			return true
		}
	}
	return false
}

// attachLibrary probes each ProbedFuncs function the open library f
// exports, at each of its versions (ibv_create_qp@IBVERBS_1.0 is another
// function). The file parsed is the file probed: the uprobes attach
// through /proc/self/fd of f, which the kernel resolves to f's inode. Each
// offset is checked against the file itself (a function symbol in an
// executable section, inside an executable segment, within the file),
// and a file that names a function more than maxVersions times is
// refused whole. It says whether anything was probed.
func (c *CallSites) attachLibrary(f *os.File, name string, id [2]uint64, size int64, budget *elfbound.Budget) bool {
	refuse := func(why string, args ...any) bool {
		c.problem(fmt.Sprintf("%s: "+why+": not probed", append([]any{name}, args...)...))
		return false
	}
	ef, err := elfbound.Open(f, size, elfbound.Limits{Section: scanSection, File: scanFile, Time: scanTime, Budget: budget})
	if err != nil {
		return refuse("%v", err)
	}
	if ef.Type != elf.ET_DYN && ef.Type != elf.ET_EXEC {
		return refuse("an ELF file of type %v, not a library", ef.Type)
	}
	i := ef.SectionByType(elf.SHT_DYNSYM)
	if i < 0 {
		return refuse("no dynamic symbols")
	}
	syms, err := ef.Symbols(i)
	if err != nil {
		return refuse("%v", err)
	}
	type at struct {
		name string
		off  uint64
	}
	var found []at
	versions := map[string]int{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || !isProbed(s.Name) {
			continue
		}
		off, err := probeOffset(ef, s, size)
		if err != nil {
			return refuse("%s at 0x%x: %v", s.Name, s.Value, err)
		}
		if versions[s.Name]++; versions[s.Name] > maxVersions {
			n := 0
			for _, x := range syms {
				if x.Name == s.Name {
					n++
				}
			}
			return refuse("%d symbols named %s (a library has one or two versions of each)", n, s.Name)
		}
		found = append(found, at{s.Name, off})
	}
	if len(found) == 0 {
		return false
	}
	fdPath := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	ex, err := link.OpenExecutable(fdPath)
	if err != nil {
		return refuse("%v", err)
	}
	var names []string
	var mine []link.Link
	failed, tried := 0, 0
	var firstErr error
	for _, a := range found {
		if _, dup := c.probedAt[probeKey{id[0], id[1], a.off}]; dup {
			continue
		}
		tried++
		opts := &link.UprobeOptions{Address: a.off}
		in, err := ex.Uprobe(a.name, c.enter, opts)
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrNotExist) {
			closeLinks(mine)
			c.problem(fmt.Sprintf("this kernel has no uprobes (CONFIG_UPROBE_EVENTS, or tracefs for older kernels): %v", err))
			return false
		}
		var out link.Link
		if err == nil {
			if out, err = ex.Uretprobe(a.name, c.coll.Programs["callsite_exit"], opts); err != nil {
				in.Close()
			}
		}
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", a.name, err)
			}
			continue
		}
		mine = append(mine, in, out)
		c.probedAt[probeKey{id[0], id[1], a.off}] = a.name
		c.probedIno[[2]uint64{id[1], a.off}] = a.name
		if !containsString(names, a.name) {
			names = append(names, a.name)
		}
	}
	// The path resolved to f's inode: checked again now that the probes
	// hold it.
	var st unix.Stat_t
	if err := unix.Stat(fdPath, &st); err != nil || st.Dev != id[0] || st.Ino != id[1] {
		closeLinks(mine)
		return refuse("its descriptor led to another file once probed")
	}
	c.links = append(c.links, mine...)
	if failed > 0 {
		c.problem(fmt.Sprintf("%s: %d of %d uprobes failed (%v)", name, failed, tried, firstErr))
	}
	if len(names) > 0 {
		sort.Strings(names)
		c.Probed = append(c.Probed, name+": "+strings.Join(names, " "))
	}
	return len(mine) > 0
}

// probeOffset is the file offset of function symbol s of ef (of size
// bytes), checked against the file: s in an allocated, executable
// section, inside an executable loaded segment's file bytes, below the
// file's end.
func probeOffset(ef *elfbound.File, s elf.Symbol, size int64) (uint64, error) {
	if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || int(s.Section) >= len(ef.Sections) {
		return 0, fmt.Errorf("in no section (index %d)", s.Section)
	}
	sec := ef.Sections[s.Section]
	if sec.Type != elf.SHT_PROGBITS || sec.Flags&(elf.SHF_ALLOC|elf.SHF_EXECINSTR) != elf.SHF_ALLOC|elf.SHF_EXECINSTR {
		return 0, fmt.Errorf("in section %s, which holds no code", sec.Name)
	}
	if s.Value < sec.Addr || s.Value-sec.Addr >= sec.Size {
		return 0, fmt.Errorf("outside its section %s", sec.Name)
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || s.Value < p.Vaddr || s.Value-p.Vaddr >= p.Filesz {
			continue
		}
		off := s.Value - p.Vaddr + p.Off
		if off < sec.Offset || off-sec.Offset >= sec.Size {
			return 0, fmt.Errorf("where its segment and its section %s disagree", sec.Name)
		}
		if off >= uint64(size) {
			return 0, fmt.Errorf("past the end of the file")
		}
		return off, nil
	}
	return 0, fmt.Errorf("in no executable segment")
}

func closeLinks(ls []link.Link) {
	for _, l := range ls {
		l.Close()
	}
}

func isProbed(name string) bool { return containsString(ProbedFuncs, name) }

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// FollowCgroup limits the probes to threads of one cgroup (leaks -- CMD's
// program); 0 lifts the limit.
func (c *CallSites) FollowCgroup(id uint64) error {
	on := uint32(0)
	if id != 0 {
		if err := c.coll.Maps["cgroups"].Put(id, uint8(1)); err != nil {
			return fmt.Errorf("--stacks: filter cgroup %d: %w", id, err)
		}
		on = 1
	}
	return c.coll.Maps["cgroup_filter"].Put(uint32(0), on)
}

// Drops counts the calls the probes could not record (a full ring).
func (c *CallSites) Drops() uint64 {
	var perCPU []uint64
	if err := c.coll.Maps["callsite_drops"].Lookup(uint32(0), &perCPU); err != nil {
		return 0
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n
}

// Close detaches the probes and stops the reader.
func (c *CallSites) Close() {
	for _, l := range c.links {
		l.Close()
	}
	c.links = nil
	if c.reader != nil {
		c.reader.Close()
		c.wg.Wait()
	}
	c.coll.Close()
	c.sym.Close()
}

// read takes the probes' records until Close, resolving each entry's
// addresses while its process still runs.
func (c *CallSites) read() {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		c.done = true
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	var rec ringbuf.Record
	for {
		err := c.reader.ReadInto(&rec)
		if err != nil {
			if !errors.Is(err, ringbuf.ErrClosed) {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
			}
			return
		}
		c.mu.Lock()
		c.busy = true
		c.mu.Unlock()
		c.record(rec.RawSample)
		c.mu.Lock()
		c.busy = false
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

var (
	callsiteHdrSize   = int(unsafe.Sizeof(bpf.CallsiteCallsiteHdr{}))
	callsiteEntrySize = int(unsafe.Sizeof(bpf.CallsiteCallsiteEntry{}))
)

// record applies one record of the probes.
func (c *CallSites) record(raw []byte) {
	if len(raw) < callsiteHdrSize {
		return
	}
	h := (*bpf.CallsiteCallsiteHdr)(unsafe.Pointer(&raw[0]))
	switch bpf.CallsiteCallsiteKind(h.Kind) {
	case bpf.CallsiteCallsiteKindCALLSITE_ENTER:
		if len(raw) < callsiteEntrySize {
			return
		}
		e := (*bpf.CallsiteCallsiteEntry)(unsafe.Pointer(&raw[0]))
		st := c.resolve(e)
		c.nameLater(st)
		c.mu.Lock()
		t := c.thread(h.Tid)
		if len(t.calls) == maxCallsPerThread {
			t.calls = append(t.calls[:0], t.calls[1:]...)
		}
		t.calls = append(t.calls, call{entry: h.Ts, sp: h.Sp, stack: st})
		t.last = h.Ts
		c.mu.Unlock()
	case bpf.CallsiteCallsiteKindCALLSITE_EXIT:
		c.mu.Lock()
		t := c.thread(h.Tid)
		for i := range t.calls {
			if cl := &t.calls[i]; cl.exit == 0 && returned(cl.sp, h.Sp) {
				cl.exit = h.Ts
			}
		}
		t.last = h.Ts
		c.mu.Unlock()
	}
}

// returned says whether a call entered with stack pointer entrySP has
// returned when a return leaves the stack pointer at exitSP: the call
// that returned, and any deeper one left by a longjmp. x86 pops the
// return address (exitSP is entrySP+8); arm64's stays.
func returned(entrySP, exitSP uint64) bool {
	if runtime.GOARCH == "amd64" {
		return entrySP < exitSP
	}
	return entrySP <= exitSP
}

// thread is the calls of tid, made room for. c.mu is held.
func (c *CallSites) thread(tid uint32) *threadCalls {
	t := c.threads[tid]
	if t != nil {
		return t
	}
	if len(c.threads) >= maxThreads {
		var oldest uint32
		first := true
		for id, x := range c.threads {
			if first || x.last < c.threads[oldest].last {
				oldest, first = id, false
			}
		}
		delete(c.threads, oldest)
	}
	t = &threadCalls{}
	c.threads[tid] = t
	return t
}

// Annotate gives a user object's create the stack of the probed call its
// thread was in when the kernel made it (the outermost one:
// rdma_create_qp's, not the ibv_create_qp it makes). A probed call's
// entry was recorded before the kernel made anything in it: while the
// probes' ring holds records or the reader one it has not applied, it
// waits for them; an empty ring means there is no call. Then it waits
// for the stack's names, unless a file in it was too slow before. Both
// waits together last joinWait at most.
func (c *CallSites) Annotate(e *rdma.Event) {
	if c == nil {
		return
	}
	if c.pending.Load() {
		c.flushWarnings()
	}
	switch {
	case e.Kind == rdma.EvCMIDDestroy:
		c.mu.Lock()
		delete(c.cmids, e.Obj)
		c.mu.Unlock()
		return
	case e.Kind != rdma.EvCreate && e.Kind != rdma.EvCMIDCreate:
		return
	case !e.Has(rdma.EvUser) && e.Kind == rdma.EvCreate:
		return
	}
	deadline := time.Now().Add(c.wait)
	c.mu.Lock()
	// A call whose return the reader has not applied yet may be over: the
	// create can be a later call's (the return and the next entry are
	// still in the ring). Only a closed call, or an empty ring, settles it.
	st, open := c.lookup(e.Actor.TID, e.Mono)
	unread := func() bool { return !c.done && (c.busy || c.reader.AvailableBytes() > 0) }
	if (st == nil || open) && unread() {
		stop := time.AfterFunc(c.wait, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
		for (st == nil || open) && unread() && time.Now().Before(deadline) {
			c.cond.Wait()
			st, open = c.lookup(e.Actor.TID, e.Mono)
		}
		stop.Stop()
	}
	if e.Type == rdma.ResCMID {
		if st == nil && e.Kind == rdma.EvCreate {
			st = c.cmids[e.Obj] // created unbound, in rdma_create_id: bound now
		}
		if e.Kind == rdma.EvCMIDCreate && st != nil {
			if len(c.cmids) >= maxUnboundIDs {
				for k := range c.cmids {
					delete(c.cmids, k)
					break
				}
			}
			c.cmids[e.Obj] = st
		}
		if e.Kind == rdma.EvCreate {
			delete(c.cmids, e.Obj)
		}
	}
	c.mu.Unlock()
	c.waitNames(st, deadline)
	e.Stack = st.stack()
}

// waitNames waits until deadline for a stack's names, unless one of its
// files was too slow before; a file too slow now is said once.
func (c *CallSites) waitNames(st *pendingStack, deadline time.Time) {
	if st == nil || !st.waitable() {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-st.done:
		return
	case <-t.C:
	}
	for _, b := range st.bins {
		if b != nil && !b.Loaded() && !b.Late() {
			b.SetLate()
			c.warn(b.Path, fmt.Sprintf("%s: its names were not read within %v: its frames are named by offset until they are", b.Path, c.wait))
		}
	}
}

// waitable says whether a wait for the stack's names may end in them: not
// when a file in it was too slow before.
func (p *pendingStack) waitable() bool {
	select {
	case <-p.done:
		return false
	default:
	}
	for _, b := range p.bins {
		if b != nil && !b.Loaded() && b.Late() {
			return false
		}
	}
	return true
}

// nameLater names a stack as soon as its files' names are read: now when
// no lookup is needed (the probes' reader never waits on a file), else in
// the background (a bounded number at once; past that, not at all: the
// stack stays placed by offset).
func (c *CallSites) nameLater(st *pendingStack) {
	if st == nil {
		return
	}
	if st.tryName() {
		c.problemsOf(st)
		return
	}
	c.mu.Lock()
	busy := c.naming >= maxNaming
	if !busy {
		c.naming++
	}
	c.mu.Unlock()
	if busy {
		st.named = st.raw
		close(st.done)
		c.warn("", fmt.Sprintf("%d stacks were being named at once: some creates are placed by offset only", maxNaming))
		return
	}
	go func() {
		for _, b := range st.bins {
			if b != nil {
				b.Wait(2 * symbolize.LoadTime)
			}
		}
		st.name()
		c.problemsOf(st)
		c.mu.Lock()
		c.naming--
		c.mu.Unlock()
	}()
}

// problemsOf says, once a file, why a stack's file has no names.
func (c *CallSites) problemsOf(st *pendingStack) {
	for _, b := range st.bins {
		if b == nil {
			continue
		}
		if err := b.Problem(); err != nil {
			c.warn(b.Path, fmt.Sprintf("gave up on %s: %v", b.Path, err))
		}
	}
}

// lookup is the stack of the outermost call of tid that was under way at
// mono, and whether that call's return is still to come. c.mu is held.
func (c *CallSites) lookup(tid uint32, mono uint64) (st *pendingStack, open bool) {
	t := c.threads[tid]
	if t == nil {
		return nil, false
	}
	for _, cl := range t.calls {
		if cl.entry <= mono && (cl.exit == 0 || mono <= cl.exit) {
			return cl.stack, cl.exit == 0
		}
	}
	return nil, false
}

// procMaps are a process's executable mappings, as last read.
type procMaps struct {
	maps []mapping
	read time.Time
}

// resolve turns an entry's addresses into frames: the call site (the
// return address the probe read at the function's first instruction),
// then the frame-pointer walk's frames above it, as long as each returns
// after a call instruction. Each frame is placed (file, offset,
// build-id); its names are read later.
func (c *CallSites) resolve(e *bpf.CallsiteCallsiteEntry) *pendingStack {
	pid := e.H.Pid
	st := &rdma.CallStack{}
	via := func(ino, off uint64) string {
		// x86 kernels hand the probe the address after the breakpoint
		// instruction (int3, one byte); others the probed one.
		name := c.probedIno[[2]uint64{ino, off}]
		if name == "" && runtime.GOARCH == "amd64" {
			name = c.probedIno[[2]uint64{ino, off - 1}]
		}
		return name
	}
	if v := &e.IpVma; v.Ino != 0 {
		// The kernel's word at the call: right even if the process is gone.
		st.Via = via(v.Ino, e.H.Ip-v.Start+v.Pgoff*uint64(os.Getpagesize()))
	}
	if m := c.mapping(pid, e.H.Ip); m != nil && st.Via == "" {
		st.Via = via(m.ino, e.H.Ip-m.start+m.off)
	}
	// The addresses, each with the index of its vma (-1: none).
	addrs, vmas := []uint64{e.Ret}, []int{0}
	n := 0
	if e.StackLen > 0 {
		n = min(int(e.StackLen)/8, len(e.Frames))
	}
	// Frames[0] is the probed function itself. Kernels since 6.11 add
	// the caller's return address read from the stack (what Ret is);
	// older ones skip it: its frame is not built yet at the first
	// instruction.
	for j := 1; j < n; j++ {
		if j == 1 && e.Frames[j] == e.Ret {
			continue
		}
		addrs = append(addrs, e.Frames[j])
		if j < len(e.Vmas) {
			vmas = append(vmas, j)
		} else {
			vmas = append(vmas, -1)
		}
	}
	if e.StackLen < 0 {
		st.Partial = "the kernel walked no user stack (error " + strconv.FormatInt(e.StackLen, 10) + ")"
	}
	var bins []*symbolize.Binary
	for i, a := range addrs {
		var v *bpf.CallsiteCallsiteVma
		if vmas[i] >= 0 {
			v = &e.Vmas[vmas[i]]
		}
		f, b, ok, why := c.frame(pid, a, v)
		if !ok {
			st.Partial = why
			if i == 0 {
				st.Frames = append(st.Frames, f) // still where it was called from
				bins = append(bins, nil)
			}
			break
		}
		st.Frames = append(st.Frames, f)
		bins = append(bins, b)
	}
	if len(st.Frames) == 0 {
		return nil
	}
	return &pendingStack{raw: st, bins: bins, done: make(chan struct{})}
}

// frame places a return address of process pid: the file that maps it,
// the offset in that file, its build-id; the file is returned for the
// names. ok is false, with why, where the walk must stop: no file maps
// it, or it does not return after a call (a frame-pointer walk through
// code without frame pointers read data).
func (c *CallSites) frame(pid uint32, addr uint64, v *bpf.CallsiteCallsiteVma) (rdma.CallFrame, *symbolize.Binary, bool, string) {
	m := c.mapping(pid, addr)
	if m == nil && v != nil {
		m = c.vmaMapping(v) // the process is gone: the kernel's word at the call
	}
	if m == nil {
		why := fmt.Sprintf("0x%x is in no file the process maps (JIT code?)", addr)
		if pm := c.procs[pid]; pm == nil || len(pm.maps) == 0 {
			why = fmt.Sprintf("process %d exited before its memory map was read", pid)
		}
		return rdma.CallFrame{Offset: addr, Binary: "[unknown]"}, nil, false, why
	}
	f := rdma.CallFrame{Binary: m.path, Offset: addr - m.start + m.off}
	if m.bin != nil && m.bin.Dropped() {
		m.bin = nil // out of the symbolizer's cache since: read again
	}
	if m.bin == nil && m.binErr == nil {
		// Once per mapping: later calls from the process find it here.
		m.bin, m.binErr = c.openBinary(pid, m)
	}
	if m.binErr != nil {
		return f, nil, false, m.binErr.Error()
	}
	b := m.bin
	f.BuildID = b.BuildID
	if !b.AfterCall(f.Offset) {
		return f, nil, false, fmt.Sprintf("%s follows no call instruction: code without frame pointers above it", f.Place())
	}
	b.Start()
	return f, b, true, ""
}

// openBinary opens a mapped file as the process maps it
// (/proc/PID/map_files: the inode mapped, whatever its name now says), or,
// the process gone, by its name in this root without following a link,
// if it is the inode mapped.
func (c *CallSites) openBinary(pid uint32, m *mapping) (*symbolize.Binary, error) {
	f, err := safeopen.Mapped(c.proc, pid, m.start, m.end, safeopen.Identity{Dev: m.dev, Ino: m.ino})
	if err != nil {
		var err2 error
		// The inode, not the device: maps gives an overlay's device
		// otherwise than stat does.
		if f, err2 = safeopen.Path(strings.TrimSuffix(m.path, " (deleted)"), safeopen.Identity{Ino: m.ino}); err2 != nil {
			return nil, fmt.Errorf("%s: %v", m.path, unwrapPath(err))
		}
	}
	return c.sym.OpenFile(f, m.path)
}

// mapping finds addr in pid's maps, read again when it is not there (a
// library loaded since).
func (c *CallSites) mapping(pid uint32, addr uint64) *mapping {
	pm := c.procs[pid]
	if pm != nil {
		if m := findMapping(pm.maps, addr); m != nil {
			return m
		}
		if time.Since(pm.read) < 10*time.Millisecond {
			return nil
		}
	}
	f, err := os.Open(filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10), "maps"))
	if err != nil {
		return nil
	}
	ms, _ := parseMaps(f, f.Name())
	f.Close()
	if len(c.procs) >= maxThreads {
		for k := range c.procs {
			delete(c.procs, k)
			break
		}
	}
	c.procs[pid] = &procMaps{maps: ms, read: time.Now()}
	c.mu.Lock()
	for _, m := range ms {
		c.addKnown(m.ino, m.path)
	}
	c.mu.Unlock()
	return findMapping(ms, addr)
}

// maxKnown bounds the files known by inode.
const maxKnown = 4096

// addKnown notes that path is the file of inode ino. c.mu is held.
func (c *CallSites) addKnown(ino uint64, path string) {
	if containsString(c.known[ino], path) {
		return
	}
	if len(c.known) >= maxKnown {
		clear(c.known)
	}
	c.known[ino] = append(c.known[ino], path)
}

// AddProgram notes a program's file (leaks -- CMD's), so that its frames
// are named even when it exits before its memory map is read.
func (c *CallSites) AddProgram(path string) {
	if c == nil {
		return
	}
	var st syscall.Stat_t
	if abs, err := filepath.Abs(path); err == nil && syscall.Stat(abs, &st) == nil {
		c.mu.Lock()
		c.addKnown(st.Ino, abs)
		c.mu.Unlock()
	}
}

// vmaMapping is the mapping the kernel said holds an address (bpf_find_vma
// at the call), with its file found by inode among the files known and
// the dynamic linker's directories, opened; nil when none is.
func (c *CallSites) vmaMapping(v *bpf.CallsiteCallsiteVma) *mapping {
	if v.Ino == 0 {
		return nil
	}
	name := cString(v.Name[:])
	c.mu.Lock()
	cands := append([]string(nil), c.known[v.Ino]...)
	c.mu.Unlock()
	for _, d := range libraryDirs() {
		cands = append(cands, filepath.Join(d, name))
	}
	for _, p := range cands {
		if filepath.Base(p) != name {
			continue
		}
		f, err := safeopen.Path(p, safeopen.Identity{Ino: v.Ino})
		if err != nil {
			continue
		}
		m := &mapping{start: v.Start, end: ^uint64(0), off: v.Pgoff * uint64(os.Getpagesize()), ino: v.Ino, path: p}
		m.bin, m.binErr = c.sym.OpenFile(f, p)
		return m
	}
	return nil
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
