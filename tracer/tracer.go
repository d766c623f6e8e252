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

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Options tune the tracer.
type Options struct {
	// RingBytes is the ring buffer size: a power of two, at least a page
	// (0: DefaultRingBytes for the CPUs online).
	RingBytes int
	// Fallback skips the BTF variants (fentry, fexit, tp_btf) and uses
	// kprobes and raw tracepoints, e.g. to test them.
	Fallback bool
	// Preemption overrides the detected preemption model (tests).
	Preemption *Preemption
	// Poll is how often the reader looks while events flow (0: 20 ms):
	// longer wakes it less, at the cost of showing events later.
	Poll time.Duration
	// Follow are the processes (tgids) whose threads' off-CPU spells and
	// ucma_get_event calls are traced; with any, the spans of every
	// process are too. None: none of those hooks is attached.
	Follow []uint32
	// Enrich names each event's owner before Run hands it over: where it
	// runs, and what else its Options ask (a port-busy event's holders,
	// an SMC socket's process). nil: an Enricher that places owners only.
	Enrich enrich.Events
	// BTF is what --btf gave (LoadBTF), read instead of the running
	// kernel's for the programs' CO-RE relocations; nil: the running
	// kernel's.
	BTF *KernelBTF
	// Stacks names where each user object was created (CallSites): the
	// uprobes cost microseconds a call, so only when asked.
	Stacks     bool
	StackProbe CallSiteOptions
}

// Report says how one hook was attached, or why it was not.
type Report struct {
	Hook    string
	Variant string // empty when skipped
	Reason  string // why earlier variants, or all of them, failed
	// Preferred says why the variant was tried before the hook's usual
	// first choice (kprobes on a preemptible kernel), when it was.
	Preferred string
	// Skipped: not tried, as the module the hook is in is not loaded.
	Skipped bool
	// Requested: an option asked for this hook (--follow-pid), so its
	// failure is said without -v.
	Requested bool
	// Rejections are the variants the kernel's verifier refused, whether
	// or not a later variant attached.
	Rejections []Rejection
	// denied: a variant failed for want of a privilege.
	denied bool
}

// Tracer holds the loaded programs and links. Run reads its events.
type Tracer struct {
	spec    *ebpf.CollectionSpec
	maps    map[string]*ebpf.Map
	progs   []*loadedProg
	links   []link.Link
	Reports []Report
	// Preemption is the kernel's preemption model as detected; Kprobes
	// says what was decided from it for the hooks that lose events when
	// an fentry program is preempted (see Hook.kprobeIfPreemptible).
	Preemption Preemption
	Kprobes    KprobeChoice
	cache      *btf.Cache
	// progOpts carry the CO-RE targets of --btf, when given.
	progOpts ebpf.ProgramOptions
	// CallSites are --stacks' probes (nil without); StacksErr why they
	// could not be had.
	CallSites *CallSites
	StacksErr error
	ring
}

// ring is the reading side: the ring buffer, the decoder and the state of
// a stop. Only Run's goroutine touches rec, ev and gotData.
type ring struct {
	reader *ringbuf.Reader
	clock  Clock
	dec    *Decoder
	enrich enrich.Events // names each event's owner: where it runs
	poll   time.Duration // how often to look while events flow
	namer  *namer        // names, off Run's path, what takes a lookup
	rec    ringbuf.Record
	ev     rdma.Event

	// ready is the ring buffer's fd again, in Go's netpoller: Run waits
	// there instead of in the reader's own blocking epoll_wait, which
	// ties up a thread that the scheduler hands the P away from and back
	// to at every wakeup.
	ready     *os.File
	readyConn syscall.RawConn
	closed    atomic.Bool

	// The kernel's producer and consumer positions (read-only mappings of
	// the ring's first two pages): a stop notes the producer's, and Run
	// delivers records until the consumer's reaches it.
	prodPos, consPos *uintptr
	posMem           [][]byte
	stopReq          atomic.Bool
	stopTaken        atomic.Bool // the first stop notes the position; later ones do nothing
	stopAt           atomic.Uint64
	stopWhen         atomic.Int64 // unix ns of the stop: the drain after it is bounded (StopDrain)
	unread           uint64       // records left in the ring at the end of that drain

	// polling is the BPF programs' reader.polling, mapped here: set while
	// events flow, so that they do not wake the reader for each one; it
	// looks every activePoll instead. nil where the map cannot be mapped.
	polling    *atomic.Uint64
	pollingMem []byte
	quarter    int  // a quarter of the ring: the kernel wakes a polling reader then
	gotData    bool // Run read records since it last waited

	// tickNow is the clock Run schedules Consumer.Tick by: time.Now (nil),
	// or a test's own, which makes the ticks of a run countable.
	tickNow func() time.Time
}

type loadedProg struct {
	name string
	coll *ebpf.Collection
	prog *ebpf.Program
}

// MaxRingBytes is the largest ring buffer: the kernel's max_entries is a
// 32-bit power of two.
const MaxRingBytes = 1 << 31

// CheckRingSize says what is wrong with a ring buffer size, if anything:
// the kernel takes a power of two, at least a page (ringbuf_map_alloc).
func CheckRingSize(n int) error {
	if n < os.Getpagesize() || n > MaxRingBytes || n&(n-1) != 0 {
		return fmt.Errorf("expected a power of two from %d to %d bytes (%d KiB to %d GiB)",
			os.Getpagesize(), MaxRingBytes, os.Getpagesize()>>10, MaxRingBytes>>30)
	}
	return nil
}

// ErrPrivileges wraps failures that need more privileges.
var ErrPrivileges = errors.New("loading BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), and CAP_SYS_RESOURCE on kernels that charge BPF memory to RLIMIT_MEMLOCK: run it as root")

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
	if n := ringBytes(opts.RingBytes); n != 0 {
		if err := CheckRingSize(n); err != nil {
			return nil, fmt.Errorf("ring buffer size %d: %w", n, err)
		}
		spec.Maps["events"].MaxEntries = uint32(n)
	}
	t := &Tracer{spec: spec, maps: map[string]*ebpf.Map{}, cache: btf.NewCache()}
	if t.progOpts, err = opts.BTF.programOptions(t.cache); err != nil {
		return nil, err
	}
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
	if opts.Preemption != nil {
		t.Preemption = *opts.Preemption
	} else {
		t.Preemption = DetectPreemption()
	}
	t.Kprobes = chooseKprobes(t.Preemption, opts.Fallback, haveKprobes(os.DirFS("/")))
	for _, pid := range opts.Follow {
		if err := t.Follow(pid); err != nil {
			t.Close()
			return nil, err
		}
	}
	// Before the hooks attach: a device registered in between is missed,
	// as its register event is.
	if err := seedIWarp(t.maps["iwarp"], iwarpDevices(os.DirFS("/sys"))); err != nil {
		t.Close()
		return nil, fmt.Errorf("count iWARP devices: %w", err)
	}
	for _, h := range Hooks {
		if h.followed && len(opts.Follow) == 0 {
			continue
		}
		if h.module != "" {
			if _, err := os.Stat("/sys/module/" + h.module); err != nil {
				t.Reports = append(t.Reports, Report{Hook: h.Name, Skipped: true,
					Reason: "module " + h.module + " not loaded (start rdmatrace after it loads to see its events)"})
				continue
			}
		}
		r := t.attachHook(h, opts.Fallback, t.Kprobes.First)
		r.Requested = h.followed
		t.Reports = append(t.Reports, r)
	}
	if opts.Stacks {
		t.CallSites, t.StacksErr = OpenCallSites(opts.StackProbe)
	}
	t.ring.poll = opts.Poll
	if t.ring.poll <= 0 {
		t.ring.poll = activePoll
	}
	if err := t.ring.open(t.maps["events"], opts.Enrich); err != nil {
		t.Close()
		return nil, err
	}
	if t.maps["reader"] != nil {
		t.pollingMem, t.polling = mapFlag(t.maps["reader"])
	}
	// What loading took (the kernel's and modules' BTF, the object's
	// specs: tens of MB) is garbage now. Collect it before tracing starts
	// rather than in the middle of the workload being traced.
	t.spec, t.cache, t.progOpts = nil, nil, ebpf.ProgramOptions{}
	debug.FreeOSMemory()
	return t, nil
}

// attachHook tries the hook's variants in order; the first whose programs
// all load and attach wins.
func (t *Tracer) attachHook(h Hook, fallback, kprobesFirst bool) Report {
	var reasons []string
	for _, v := range h.variants {
		if fallback && h.fallbackSkips(v) {
			reasons = append(reasons, v.name+": skipped (--fallback)")
		}
	}
	var rejected []Rejection
	denied := false
	usual := h.order(fallback, false)[0].name
	for _, v := range h.order(fallback, kprobesFirst) {
		var links []link.Link
		var loaded []*loadedProg
		var err error
		for _, p := range v.progs {
			var lp *loadedProg
			if lp, err = t.load(p); err != nil {
				if r := newRejection(h.Name, v.name, p.name, err); r != nil {
					rejected = append(rejected, *r)
				}
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
			r := Report{Hook: h.Name, Variant: v.name, Reason: strings.Join(reasons, "; "), Rejections: rejected}
			if len(reasons) == 0 && v.name != usual {
				r.Preferred = "preferred to " + usual + ": " + t.Kprobes.Why
			}
			return r
		}
		for _, l := range links {
			l.Close()
		}
		for _, lp := range loaded {
			lp.coll.Close()
		}
		reasons = append(reasons, v.name+": "+loadReason(err))
		denied = denied || classifyLoad(err) == failPrivileges
	}
	return Report{Hook: h.Name, Reason: strings.Join(reasons, "; "), Rejections: rejected, denied: denied}
}

// load loads one program with the shared maps.
func (t *Tracer) load(p prog) (*loadedProg, error) {
	name := p.name
	ps, ok := t.spec.Programs[name]
	if !ok {
		return nil, fmt.Errorf("no program %s in the object", name)
	}
	ps = ps.Copy()
	if p.kind == tracing && p.target != "" {
		ps.AttachTo = p.target // a renamed function or tracepoint
	}
	sub := &ebpf.CollectionSpec{
		Maps:      map[string]*ebpf.MapSpec{},
		Programs:  map[string]*ebpf.ProgramSpec{name: ps},
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
	// A failure keeps its kind (loadReason): a verifier rejection is
	// EACCES too, not a missing privilege.
	coll, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{MapReplacements: repl, Cache: t.cache, Programs: t.progOpts})
	if err != nil {
		return nil, err
	}
	return &loadedProg{name: name, coll: coll, prog: coll.Programs[name]}, nil
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

// Drops is how many events the kernel could not put in the ring buffer.
func (t *Tracer) Drops() (uint64, error) { return t.perCPUSum("drops") }

// perCPUSum adds up a one-entry per-CPU counter map.
func (t *Tracer) perCPUSum(name string) (uint64, error) {
	var perCPU []uint64
	if err := t.maps[name].Lookup(uint32(0), &perCPU); err != nil {
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
	t.ring.close()
	if t.CallSites != nil {
		t.CallSites.Close()
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
