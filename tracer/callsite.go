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

	"github.com/rdmatrace/rdmatrace/bpf"
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
	// ProcRoot is /proc (tests may point elsewhere).
	ProcRoot string
	// plain loads the entry program without bpf_find_vma, as on kernels
	// before 5.17 (tests).
	plain bool
}

// CallSites finds where in a program each user object was created: the
// uprobes of bpf/callsite.bpf.c bracket each call of a ProbedFuncs
// function with the caller's stack; Annotate gives a create the stack of
// the call its thread was in. A goroutine reads the probes' ring and
// resolves the addresses at once, while the process still runs.
type CallSites struct {
	coll   *ebpf.Collection
	enter  *ebpf.Program // callsite_enter_vma where the kernel takes it
	links  []link.Link
	reader *ringbuf.Reader
	sym    *symbolize.Symbolizer
	proc   string
	// Probed names what is probed ("libibverbs.so.1.14.44.0: ibv_alloc_pd ...");
	// Problems what could not be.
	Probed, Problems []string
	probedAt         map[probeKey]string  // (file, offset) -> function
	probedIno        map[[2]uint64]string // (inode, offset) -> function: for the kernel's word at the call

	mu      sync.Mutex
	cond    *sync.Cond
	threads map[uint32]*threadCalls
	busy    bool // the reader holds a record it has not applied yet
	done    bool
	readErr error                      // what ended the reader, other than Close
	cmids   map[uint64]*rdma.CallStack // unbound rdma_cm IDs' stacks, for their later bind
	procs   map[uint32]*procMaps
	wg      sync.WaitGroup
	// known are files by inode, from what was probed, what processes
	// mapped and the programs started: where a frame's file is found
	// once its process has exited. Only the reader touches it after
	// OpenCallSites (AddProgram holds mu).
	known map[uint64][]string
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
	stack           *rdma.CallStack
}

// Bounds: calls kept per thread (the main ring may be this many calls
// behind the thread), threads kept, rdma_cm IDs kept unbound.
const (
	maxCallsPerThread = 64
	maxThreads        = 1024
	maxUnboundIDs     = 4096
	// joinWait bounds how long a create waits for the probes' reader to
	// catch up with it: long enough for the first call of a process,
	// whose binaries it reads (a distribution's libc with its debug file:
	// a second under the race detector, more under emulation).
	joinWait = 5 * time.Second
)

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
	c := &CallSites{coll: coll, enter: coll.Programs[enter], sym: symbolize.New(), proc: o.ProcRoot, probedAt: map[probeKey]string{},
		known: map[uint64][]string{}, probedIno: map[[2]uint64]string{},
		threads: map[uint32]*threadCalls{}, cmids: map[uint64]*rdma.CallStack{}, procs: map[uint32]*procMaps{}}
	if c.proc == "" {
		c.proc = "/proc"
	}
	c.cond = sync.NewCond(&c.mu)
	libs := append([]string(nil), o.Libraries...)
	if !o.NoDefault {
		libs = append(libs, findLibraries(libraryDirs(), c.proc)...)
	}
	seen := map[[2]uint64]bool{}
	for _, l := range libs {
		var st syscall.Stat_t
		if err := syscall.Stat(l, &st); err != nil {
			continue
		}
		k := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[k] {
			continue // the same file by another path (/lib is /usr/lib)
		}
		seen[k] = true
		c.attachLibrary(l, uint64(st.Dev), st.Ino)
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

// findLibraries are libibverbs and librdmacm where the dynamic linker
// looks, and wherever running processes have them mapped (a container's
// own, through /proc/PID/root).
func findLibraries(dirs []string, proc string) []string {
	var out []string
	for _, d := range dirs {
		for _, n := range libraryNames {
			if p, err := filepath.EvalSymlinks(filepath.Join(d, n)); err == nil {
				out = append(out, p)
			}
		}
	}
	ents, _ := os.ReadDir(proc)
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
			b := filepath.Base(m.path)
			for _, n := range libraryNames {
				if strings.HasPrefix(b, strings.TrimSuffix(n, ".1")) {
					out = append(out, filepath.Join(proc, strconv.FormatUint(pid, 10), "root", m.path))
				}
			}
		}
	}
	return out
}

// attachLibrary probes each ProbedFuncs function the library exports, at
// each of its versions (ibv_create_qp@IBVERBS_1.0 is another function).
func (c *CallSites) attachLibrary(path string, dev, ino uint64) {
	f, err := elf.Open(path)
	if err != nil {
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	syms, _ := f.DynamicSymbols()
	type at struct {
		name string
		off  uint64
	}
	var found []at
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || !isProbed(s.Name) {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Memsz {
				found = append(found, at{s.Name, s.Value - p.Vaddr + p.Off})
			}
		}
	}
	f.Close()
	if len(found) == 0 {
		return
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	var names []string
	for _, a := range found {
		if _, dup := c.probedAt[probeKey{dev, ino, a.off}]; dup {
			continue
		}
		opts := &link.UprobeOptions{Address: a.off}
		in, err := ex.Uprobe(a.name, c.enter, opts)
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrNotExist) {
			c.Problems = append(c.Problems, fmt.Sprintf("this kernel has no uprobes (CONFIG_UPROBE_EVENTS, or tracefs for older kernels): %v", err))
			return
		}
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: uprobe %s: %v", path, a.name, err))
			continue
		}
		out, err := ex.Uretprobe(a.name, c.coll.Programs["callsite_exit"], opts)
		if err != nil {
			in.Close()
			c.Problems = append(c.Problems, fmt.Sprintf("%s: uretprobe %s: %v", path, a.name, err))
			continue
		}
		c.links = append(c.links, in, out)
		c.probedAt[probeKey{dev, ino, a.off}] = a.name
		c.probedIno[[2]uint64{ino, a.off}] = a.name
		if !containsString(names, a.name) {
			names = append(names, a.name)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		c.Probed = append(c.Probed, path+": "+strings.Join(names, " "))
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
// waits for them (up to joinWait); an empty ring means there is no call.
func (c *CallSites) Annotate(e *rdma.Event) {
	if c == nil {
		return
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
	c.mu.Lock()
	defer c.mu.Unlock()
	// A call whose return the reader has not applied yet may be over: the
	// create can be a later call's (the return and the next entry are
	// still in the ring). Only a closed call, or an empty ring, settles it.
	st, open := c.lookup(e.Actor.TID, e.Mono)
	pending := func() bool { return !c.done && (c.busy || c.reader.AvailableBytes() > 0) }
	if (st == nil || open) && pending() {
		deadline := time.Now().Add(joinWait)
		stop := time.AfterFunc(joinWait, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
		for (st == nil || open) && pending() && time.Now().Before(deadline) {
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
	e.Stack = st
}

// lookup is the stack of the outermost call of tid that was under way at
// mono, and whether that call's return is still to come. c.mu is held.
func (c *CallSites) lookup(tid uint32, mono uint64) (st *rdma.CallStack, open bool) {
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
// after a call instruction.
func (c *CallSites) resolve(e *bpf.CallsiteCallsiteEntry) *rdma.CallStack {
	pid := e.H.Pid
	st := &rdma.CallStack{}
	if v := &e.IpVma; v.Ino != 0 {
		// The kernel's word at the call: right even if the process is gone.
		off := e.H.Ip - v.Start + v.Pgoff*uint64(os.Getpagesize())
		if st.Via = c.probedIno[[2]uint64{v.Ino, off}]; st.Via == "" && runtime.GOARCH == "amd64" {
			st.Via = c.probedIno[[2]uint64{v.Ino, off - 1}]
		}
	}
	if m := c.mapping(pid, e.H.Ip); m != nil && st.Via == "" {
		var s syscall.Stat_t
		if syscall.Stat(c.filePath(pid, m), &s) == nil || syscall.Stat(m.path, &s) == nil {
			off := e.H.Ip - m.start + m.off
			// x86 kernels hand the probe the address after the breakpoint
			// instruction (int3, one byte); others the probed one.
			if st.Via = c.probedAt[probeKey{uint64(s.Dev), s.Ino, off}]; st.Via == "" && runtime.GOARCH == "amd64" {
				st.Via = c.probedAt[probeKey{uint64(s.Dev), s.Ino, off - 1}]
			}
		}
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
	for i, a := range addrs {
		var v *bpf.CallsiteCallsiteVma
		if vmas[i] >= 0 {
			v = &e.Vmas[vmas[i]]
		}
		f, ok, why := c.frame(pid, a, v)
		if !ok {
			st.Partial = why
			if i == 0 {
				st.Frames = append(st.Frames, f) // still where it was called from
			}
			break
		}
		st.Frames = append(st.Frames, f)
	}
	if len(st.Frames) == 0 {
		return nil
	}
	return st
}

// frame symbolizes a return address of process pid. ok is false, with
// why, where the walk must stop: no file maps it, or it does not return
// after a call (a frame-pointer walk through code without frame
// pointers read data).
func (c *CallSites) frame(pid uint32, addr uint64, v *bpf.CallsiteCallsiteVma) (rdma.CallFrame, bool, string) {
	m := c.mapping(pid, addr)
	if m == nil && v != nil {
		m = c.vmaMapping(v) // the process is gone: the kernel's word at the call
	}
	if m == nil {
		why := fmt.Sprintf("0x%x is in no file the process maps (JIT code?)", addr)
		if pm := c.procs[pid]; pm == nil || len(pm.maps) == 0 {
			why = fmt.Sprintf("process %d exited before its memory map was read", pid)
		}
		return rdma.CallFrame{Offset: addr, Binary: "[unknown]"}, false, why
	}
	f := rdma.CallFrame{Binary: m.path, Offset: addr - m.start + m.off}
	if m.bin == nil && m.binErr == nil {
		// Once per mapping: later calls from the process find it here.
		m.bin, m.binErr = c.sym.Open(c.filePath(pid, m))
		var s syscall.Stat_t
		if m.binErr != nil && syscall.Stat(m.path, &s) == nil && s.Ino == m.ino {
			// Not there through the process's root (it has exited, or
			// its root hides the file): the same file in ours. The
			// inode, not the device: maps gives an overlay's or 9p's
			// device otherwise than stat does.
			m.bin, m.binErr = c.sym.Open(m.path)
		}
	}
	if m.binErr != nil {
		return f, false, m.binErr.Error()
	}
	b := m.bin
	f.BuildID = b.BuildID
	if !b.AfterCall(f.Offset) {
		return f, false, fmt.Sprintf("%s follows no call instruction: code without frame pointers above it", f.Place())
	}
	f.Func, f.File, f.Line, _ = b.Place(f.Offset)
	return f, true, ""
}

// filePath is where the mapped file is read: through the process's root
// (a container's own files).
func (c *CallSites) filePath(pid uint32, m *mapping) string {
	return filepath.Join(c.proc, strconv.FormatUint(uint64(pid), 10), "root", m.path)
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
// the dynamic linker's directories; nil when none is.
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
		var st syscall.Stat_t
		if filepath.Base(p) == name && syscall.Stat(p, &st) == nil && st.Ino == v.Ino {
			return &mapping{start: v.Start, end: ^uint64(0), off: v.Pgoff * uint64(os.Getpagesize()), ino: v.Ino, path: p}
		}
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
