package tracer

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/rdma"
)

// Options tune the tracer.
type Options struct {
	// RingBytes is the ring buffer size: a power of two, at least a page.
	RingBytes int
	// Fallback skips the BTF variants (fentry, fexit, tp_btf) and uses
	// kprobes and raw tracepoints, e.g. to test them.
	Fallback bool
	// Follow are the processes (tgids) whose threads' off-CPU spells and
	// ucma_get_event calls are traced; with any, the spans of every
	// process are too. None: none of those hooks is attached.
	Follow []uint32
}

// Report says how one hook was attached, or why it was not.
type Report struct {
	Hook    string
	Variant string // empty when skipped
	Reason  string // why earlier variants, or all of them, failed
}

// Tracer holds the loaded programs and links.
type Tracer struct {
	spec    *ebpf.CollectionSpec
	maps    map[string]*ebpf.Map
	progs   []*loadedProg
	links   []link.Link
	reader  *ringbuf.Reader
	Reports []Report
	cache   *btf.Cache

	// ready is the ring buffer's fd again, in Go's netpoller: Read waits
	// there instead of in the reader's own blocking epoll_wait, which
	// ties up a thread that the scheduler hands the P away from and back
	// to at every wakeup. nil where the fd cannot be polled: Read then
	// blocks in the reader as before.
	ready     *os.File
	readyConn syscall.RawConn
	flushReq  atomic.Bool
	closed    atomic.Bool

	// polling is the BPF programs' reader.polling, mapped here: set while
	// events flow, so that they do not wake the reader for each one; it
	// looks every activePoll instead. nil where the map cannot be mapped.
	polling    *atomic.Uint64
	pollingMem []byte
	quarter    int  // a quarter of the ring: the kernel wakes a polling reader then
	gotData    bool // Read returned records since it last waited
}

// activePoll is how often a reader looks while events flow: how late an
// event after the first of a burst may be read.
const activePoll = 20 * time.Millisecond

type loadedProg struct {
	coll *ebpf.Collection
	prog *ebpf.Program
}

// ErrPrivileges wraps failures that need more privileges.
var ErrPrivileges = errors.New("loading BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), and CAP_SYS_RESOURCE on kernels that charge BPF memory to RLIMIT_MEMLOCK: run rdmatrace trace as root")

// Open loads the maps and attaches every hook it can. It fails only when
// nothing can be loaded at all; per-hook failures are in Reports.
func Open(opts Options) (*Tracer, error) {
	if err := rlimit.RemoveMemlock(); err != nil && !errors.Is(err, os.ErrPermission) {
		return nil, fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	spec, err := bpf.LoadRdmatrace()
	if err != nil {
		return nil, err
	}
	if opts.RingBytes != 0 {
		if opts.RingBytes < os.Getpagesize() || opts.RingBytes&(opts.RingBytes-1) != 0 {
			return nil, fmt.Errorf("ring buffer size %d: expected a power of two of at least %d bytes", opts.RingBytes, os.Getpagesize())
		}
		spec.Maps["events"].MaxEntries = uint32(opts.RingBytes)
	}
	t := &Tracer{spec: spec, maps: map[string]*ebpf.Map{}, cache: btf.NewCache()}
	for name, ms := range spec.Maps {
		if strings.HasPrefix(name, ".") {
			continue // .rodata and friends belong to each program's collection
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			t.Close()
			if errors.Is(err, os.ErrPermission) {
				return nil, ErrPrivileges
			}
			return nil, fmt.Errorf("create map %s: %w", name, err)
		}
		t.maps[name] = m
	}
	for _, pid := range opts.Follow {
		if err := t.Follow(pid); err != nil {
			t.Close()
			return nil, err
		}
	}
	for _, h := range Hooks {
		if h.followed && len(opts.Follow) == 0 {
			continue
		}
		t.Reports = append(t.Reports, t.attachHook(h, opts.Fallback))
	}
	t.reader, err = ringbuf.NewReader(t.maps["events"])
	if err != nil {
		t.Close()
		return nil, err
	}
	t.ready, t.readyConn = pollable(t.maps["events"].FD())
	t.quarter = int(t.maps["events"].MaxEntries() / 4)
	if t.ready != nil {
		t.pollingMem, t.polling = mapFlag(t.maps["reader"])
	}
	// What loading took (the kernel's and modules' BTF, the object's
	// specs: tens of MB) is garbage now. Collect it before tracing starts
	// rather than in the middle of the workload being traced.
	t.spec, t.cache = nil, nil
	debug.FreeOSMemory()
	return t, nil
}

// attachHook tries the hook's variants in order; the first whose programs
// all load and attach wins.
func (t *Tracer) attachHook(h Hook, fallback bool) Report {
	var reasons []string
	for i, v := range h.variants {
		if fallback && i == 0 && len(h.variants) > 1 {
			reasons = append(reasons, v.name+": skipped (--fallback)")
			continue
		}
		var links []link.Link
		var loaded []*loadedProg
		var err error
		for _, p := range v.progs {
			var lp *loadedProg
			if lp, err = t.load(p.name); err != nil {
				break
			}
			loaded = append(loaded, lp)
			var l link.Link
			if l, err = p.attach(lp); err != nil {
				break
			}
			links = append(links, l)
		}
		if err == nil {
			t.links = append(t.links, links...)
			t.progs = append(t.progs, loaded...)
			return Report{Hook: h.Name, Variant: v.name, Reason: strings.Join(reasons, "; ")}
		}
		for _, l := range links {
			l.Close()
		}
		for _, lp := range loaded {
			lp.coll.Close()
		}
		reasons = append(reasons, v.name+": "+shortError(err))
	}
	return Report{Hook: h.Name, Reason: strings.Join(reasons, "; ")}
}

// load loads one program with the shared maps.
func (t *Tracer) load(name string) (*loadedProg, error) {
	ps, ok := t.spec.Programs[name]
	if !ok {
		return nil, fmt.Errorf("no program %s in the object", name)
	}
	sub := &ebpf.CollectionSpec{
		Maps:      map[string]*ebpf.MapSpec{},
		Programs:  map[string]*ebpf.ProgramSpec{name: ps.Copy()},
		Variables: t.spec.Variables,
		Types:     t.spec.Types,
	}
	repl := map[string]*ebpf.Map{}
	for n, ms := range t.spec.Maps {
		sub.Maps[n] = ms.Copy()
		if m, ok := t.maps[n]; ok {
			repl[n] = m
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{MapReplacements: repl, Cache: t.cache})
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w (%v)", ErrPrivileges, err)
		}
		return nil, err
	}
	return &loadedProg{coll: coll, prog: coll.Programs[name]}, nil
}

// shortError keeps the first line of a verifier or attach error.
func shortError(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Attached counts the hooks that are attached.
func (t *Tracer) Attached() int {
	n := 0
	for _, r := range t.Reports {
		if r.Variant != "" {
			n++
		}
	}
	return n
}

// Read decodes the next record into ev. It waits at most wait for one
// (0: no limit) and then returns os.ErrDeadlineExceeded. After Flush it
// returns what is queued, then ringbuf.ErrFlushed; after Close,
// ringbuf.ErrClosed.
func (t *Tracer) Read(rec *ringbuf.Record, d *Decoder, ev *rdma.Event, wait time.Duration) error {
	if t.ready == nil {
		return t.readBlocking(rec, d, ev, wait)
	}
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	// A deadline in the past: the reader only takes what is queued.
	t.reader.SetDeadline(longAgo)
	for {
		err := t.reader.ReadInto(rec)
		if err == nil {
			t.gotData = true
			return d.Decode(rec.RawSample, ev)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		// The ring is empty.
		if t.flushReq.CompareAndSwap(true, false) {
			return ringbuf.ErrFlushed
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return os.ErrDeadlineExceeded
		}
		if t.polling != nil && t.gotData {
			// Events are flowing: look again in a moment, or when the
			// ring fills a quarter.
			t.gotData = false
			t.polling.Store(1)
			until := now.Add(activePoll)
			if !deadline.IsZero() && deadline.Before(until) {
				until = deadline
			}
			if err := t.waitReadable(until, t.quarter); err != nil {
				return err
			}
			continue
		}
		// Idle: be woken by the next event. The store is a full barrier
		// (XCHG), so the look at the ring below comes after it.
		if t.polling != nil {
			t.polling.Store(0)
			if t.reader.AvailableBytes() > 0 {
				continue
			}
		}
		if err := t.waitReadable(deadline, 1); err != nil {
			return err
		}
	}
}

// longAgo is a deadline that has passed (the zero time means none).
var longAgo = time.Unix(1, 0)

// waitReadable parks the goroutine until the ring holds at least bytes,
// Flush is called, or the deadline passes.
func (t *Tracer) waitReadable(deadline time.Time, bytes int) error {
	if err := t.ready.SetReadDeadline(deadline); err != nil {
		return t.closedOr(err)
	}
	err := t.readyConn.Read(func(uintptr) bool { return t.reader.AvailableBytes() >= bytes || t.flushReq.Load() })
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // Read looks again
	}
	return t.closedOr(err)
}

func (t *Tracer) closedOr(err error) error {
	if t.closed.Load() {
		return ringbuf.ErrClosed
	}
	return err
}

func (t *Tracer) readBlocking(rec *ringbuf.Record, d *Decoder, ev *rdma.Event, wait time.Duration) error {
	if wait > 0 {
		t.reader.SetDeadline(time.Now().Add(wait))
	} else {
		t.reader.SetDeadline(time.Time{})
	}
	if err := t.reader.ReadInto(rec); err != nil {
		return err
	}
	return d.Decode(rec.RawSample, ev)
}

// Flush makes a blocked Read return: first every record queued now, then
// ringbuf.ErrFlushed. It may be called from another goroutine.
func (t *Tracer) Flush() error {
	if t.ready == nil {
		return t.reader.Flush()
	}
	t.flushReq.Store(true)
	return t.ready.SetReadDeadline(time.Now()) // wakes a waiting Read
}

// mapFlag maps the first 8 bytes of an mmapable array map's value.
func mapFlag(m *ebpf.Map) ([]byte, *atomic.Uint64) {
	if m == nil {
		return nil, nil
	}
	mem, err := unix.Mmap(m.FD(), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return mem, (*atomic.Uint64)(unsafe.Pointer(&mem[0]))
}

// pollable returns a copy of fd registered with Go's netpoller, or nils
// when the kernel will not poll it that way.
func pollable(fd int) (*os.File, syscall.RawConn) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil
	}
	f := os.NewFile(uintptr(dup), "ringbuf")
	// Only a file in the netpoller takes deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil
	}
	return f, rc
}

// Drops is how many events the kernel could not put in the ring buffer.
func (t *Tracer) Drops() (uint64, error) {
	var perCPU []uint64
	if err := t.maps["drops"].Lookup(uint32(0), &perCPU); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n, nil
}

// Close detaches everything. The links are not pinned, so they also go
// away when the process dies, even by SIGKILL.
func (t *Tracer) Close() error {
	t.closed.Store(true)
	if t.ready != nil {
		t.ready.Close()
	}
	if t.pollingMem != nil {
		t.polling = nil
		unix.Munmap(t.pollingMem)
	}
	if t.reader != nil {
		t.reader.Close()
	}
	for _, l := range t.links {
		l.Close()
	}
	for _, p := range t.progs {
		p.coll.Close()
	}
	for _, m := range t.maps {
		m.Close()
	}
	return nil
}

// Follow adds a process (tgid) to those whose threads are followed.
func (t *Tracer) Follow(tgid uint32) error {
	if err := t.maps["follow"].Put(tgid, uint8(1)); err != nil {
		return fmt.Errorf("follow pid %d: %w", tgid, err)
	}
	return nil
}

// Pending is how many bytes wait in the ring buffer.
func (t *Tracer) Pending() int { return t.reader.AvailableBytes() }
