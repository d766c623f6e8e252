package tracer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Consumer is what Run feeds. Only Event is required; Run calls every
// function from its own goroutine, one at a time.
type Consumer struct {
	// Event gets each event in ring order. The event is reused for the
	// next one: copy what you keep. An error ends Run with that error.
	Event func(*rdma.Event) error
	// Tick is called about every Every, whether events flow or not: a
	// flood does not starve it.
	Tick  func()
	Every time.Duration
	// Idle is called when the ring has been emptied, before Run waits for
	// more: the moment to flush buffered output.
	Idle func()
	// Bad gets a record that does not decode (it is skipped).
	Bad func(error)
	// Raw, when set, gets every record as the kernel wrote it.
	Raw *RawWriter
}

// ErrClosed is what Run returns when the tracer is closed under it.
var ErrClosed = errors.New("tracer closed")

// Run reads events and hands them to c until ctx ends, c.Event returns an
// error, or the tracer is closed. When ctx ends, Run delivers the events
// queued at that moment, and no more, then returns nil: however fast the
// kernel queues, a stop is honoured within one ring's worth of events,
// and within StopDrain: what is still queued then is passed over unread
// and counted (Unread). Events whose naming takes a lookup (a port-busy
// event's holders) are named off this path and delivered as soon as they
// are, after the events read in the meantime (see namer). Run allocates
// nothing per event but for those.
func (t *Tracer) Run(ctx context.Context, c Consumer) error {
	if c.Event == nil {
		return errors.New("tracer: Run needs a Consumer.Event")
	}
	t.stopReq.Store(false)
	t.stopTaken.Store(false)
	t.unread = 0
	unhook := context.AfterFunc(ctx, t.stop)
	defer unhook()
	clock := t.tickNow
	if clock == nil {
		clock = time.Now
	}
	var nextTick time.Time
	if c.Tick != nil && c.Every > 0 {
		nextTick = clock().Add(c.Every)
	}
	tick := func() {
		if !nextTick.IsZero() {
			if now := clock(); !now.Before(nextTick) {
				c.Tick()
				nextTick = now.Add(c.Every)
			}
		}
	}
	delivered := uint(0)
	lastYield := time.Now()
	for {
		if t.namer.ready() {
			n, err := t.namer.deliverReady(c.Event)
			if delivered += n; err != nil {
				return err
			}
		}
		if t.stopReq.Load() && t.reachedStop() {
			return t.drainNamer(c)
		}
		// A consumer slower than a flood (a full ring, 58 000 records of
		// a 16 MiB one, at the pace of a starved CPU) must not hold
		// the stop for longer than StopDrain.
		if delivered%64 == 0 && t.stopReq.Load() && time.Since(time.Unix(0, t.stopWhen.Load())) > StopDrain {
			if err := t.skipToStop(); err != nil {
				return err
			}
			return t.drainNamer(c)
		}
		err := t.reader.ReadInto(&t.rec)
		if err == nil {
			t.gotData = true
			if c.Raw != nil {
				if err := c.Raw.Write(t.rec.RawSample); err != nil {
					return err
				}
			}
			if err := t.dec.Decode(t.rec.RawSample, &t.ev); err != nil {
				if c.Bad != nil {
					c.Bad(err)
				}
			} else {
				t.CallSites.Annotate(&t.ev)
				if t.namer == nil || !wants(&t.ev) {
					t.enrich.Event(&t.ev)
					if err := c.Event(&t.ev); err != nil {
						return err
					}
				} else if !t.namer.take(&t.ev) { // over the budget: named without the lookup
					if err := c.Event(&t.ev); err != nil {
						return err
					}
				}
			}
			// A clock read every 64 events keeps ticks on time under a
			// flood at a negligible cost per event.
			// Yield now and then while the ring never empties: Go's
			// scheduler otherwise preempts a goroutine that has run 10 ms
			// with a signal, which under the emulator took a quarter of
			// the reader's CPU (docs/benchmarks.md).
			if delivered++; delivered%16 == 0 {
				if now := time.Now(); now.Sub(lastYield) > yieldEvery {
					runtime.Gosched()
					lastYield = now
				}
			}
			if delivered%64 == 0 {
				tick()
				// AfterFunc's goroutine may be slow to run on a busy
				// host: take the stop here too, within 64 events of it.
				if ctx.Err() != nil {
					t.stop()
				}
			}
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return t.closedOr(err)
		}
		// The ring is empty: everything queued at a stop has been read.
		if t.stopReq.Load() {
			return t.drainNamer(c)
		}
		if delivered > 0 && c.Idle != nil {
			c.Idle()
		}
		delivered = 0
		tick()
		if err := t.wait(nextTick); err != nil {
			return err
		}
	}
}

// yieldEvery is how long Run reads without a break before it yields:
// well under the 10 ms after which the scheduler would preempt it (at
// 5 ms a loaded host still saw a signal every 100 ms or so).
const yieldEvery = time.Millisecond

// activePoll is how often a reader looks while events flow, unless
// Options.Poll says otherwise: how late an event after the first of a
// burst may be read.
const activePoll = 20 * time.Millisecond

// longAgo is a deadline that has passed (the zero time means none): the
// ringbuf reader then only takes what is queued, and Run does the waiting.
var longAgo = time.Unix(1, 0)

// open starts reading the ring buffer map events; x names the events'
// owners (nil: an Enricher of its own, which places them).
func (r *ring) open(events *ebpf.Map, x enrich.Events) (err error) {
	r.clock = NewClock()
	r.dec = NewDecoder(r.clock)
	if r.enrich = x; x == nil {
		r.enrich = enrich.New(enrich.Options{})
	}
	r.namer = newNamer(r.enrich.Event, func() {
		if !r.closed.Load() {
			_ = r.ready.SetReadDeadline(time.Now())
		}
	})
	if r.reader, err = ringbuf.NewReader(events); err != nil {
		return err
	}
	r.reader.SetDeadline(longAgo)
	if r.ready, r.readyConn, err = pollable(events.FD()); err != nil {
		return fmt.Errorf("ring buffer: %w", err)
	}
	// The consumer page, then the producer page (read-only mappings are
	// allowed for both: kernel/bpf/ringbuf.c, ringbuf_map_mmap_kern).
	page := os.Getpagesize()
	for _, off := range []int64{0, int64(page)} {
		mem, err := unix.Mmap(events.FD(), off, page, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("map the ring buffer's positions: %w", err)
		}
		r.posMem = append(r.posMem, mem)
	}
	r.consPos = (*uintptr)(unsafe.Pointer(&r.posMem[0][0]))
	r.prodPos = (*uintptr)(unsafe.Pointer(&r.posMem[1][0]))
	r.quarter = int(events.MaxEntries() / 4)
	return nil
}

// drainNamer delivers, at the stop, the events the namer has: named if it
// names them within StopDrain of the stop, else unnamed and counted.
func (r *ring) drainNamer(c Consumer) error {
	return r.namer.drain(time.Unix(0, r.stopWhen.Load()).Add(StopDrain), c.Event)
}

// StopDrain bounds how long Run delivers, after a stop, what was queued
// at it. rdmabench gives the tracer 10 s from SIGINT to exit.
var StopDrain = 2 * time.Second

// Unread is how many records were left in the ring, unread, when the
// drain after a stop reached StopDrain: events lost, to be said so.
func (r *ring) Unread() uint64 { return r.unread }

// skipToStop passes over, without decoding or delivering them, the
// records still queued at the stop, and counts them.
func (r *ring) skipToStop() error {
	for !r.reachedStop() {
		err := r.reader.ReadInto(&r.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break // the ring is empty (a record reserved but discarded)
		}
		if err != nil {
			return r.closedOr(err)
		}
		r.unread++
	}
	return nil
}

// stop notes where the producer is and wakes a waiting Run.
func (r *ring) stop() {
	if !r.stopTaken.CompareAndSwap(false, true) {
		return // the position was noted already
	}
	r.stopWhen.Store(time.Now().UnixNano())
	r.stopAt.Store(uint64(atomic.LoadUintptr(r.prodPos)))
	r.stopReq.Store(true)
	if !r.closed.Load() {
		_ = r.ready.SetReadDeadline(time.Now())
	}
}

// reachedStop says whether the consumer has read up to where the
// producer was at the stop. The positions only grow; the difference is
// taken modulo 2^64.
func (r *ring) reachedStop() bool {
	return int64(uint64(atomic.LoadUintptr(r.consPos))-r.stopAt.Load()) >= 0
}

// wait parks Run until events arrive, a stop, or the deadline (zero:
// none).
func (r *ring) wait(deadline time.Time) error {
	now := time.Now()
	if !deadline.IsZero() && !now.Before(deadline) {
		return nil
	}
	if r.polling != nil && r.gotData {
		// Events are flowing: look again in a moment, or when the ring
		// fills a quarter.
		r.gotData = false
		r.polling.Store(1)
		until := now.Add(r.poll)
		if !deadline.IsZero() && deadline.Before(until) {
			until = deadline
		}
		return r.waitReadable(until, r.quarter)
	}
	// Idle: be woken by the next event. The store is a full barrier
	// (XCHG), so the look at the ring below comes after it.
	if r.polling != nil {
		r.polling.Store(0)
		if r.reader.AvailableBytes() > 0 {
			return nil
		}
	}
	return r.waitReadable(deadline, 1)
}

// waitReadable parks the goroutine until the ring holds at least bytes,
// a stop, or the deadline.
func (r *ring) waitReadable(deadline time.Time, bytes int) error {
	if err := r.ready.SetReadDeadline(deadline); err != nil {
		return r.closedOr(err)
	}
	// stop sets stopReq before it moves the deadline: either this check
	// sees the stop, or the deadline it sets wakes the wait.
	err := r.readyConn.Read(func(uintptr) bool {
		return r.reader.AvailableBytes() >= bytes || r.stopReq.Load() || r.namer.ready()
	})
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // Run looks again
	}
	return r.closedOr(err)
}

func (r *ring) closedOr(err error) error {
	if r.closed.Load() || errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Clock is the clock that Run's events carry wall times of.
func (r *ring) Clock() Clock { return r.clock }

func (r *ring) close() {
	r.closed.Store(true)
	r.namer.close()
	if r.ready != nil {
		r.ready.Close()
	}
	if r.pollingMem != nil {
		r.polling = nil
		unix.Munmap(r.pollingMem)
	}
	if r.reader != nil {
		r.reader.Close()
	}
	for _, m := range r.posMem {
		unix.Munmap(m)
	}
	r.posMem, r.prodPos, r.consPos = nil, nil, nil
}

// mapFlag maps the first 8 bytes of an mmapable array map's value.
func mapFlag(m *ebpf.Map) ([]byte, *atomic.Uint64) {
	mem, err := unix.Mmap(m.FD(), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return mem, (*atomic.Uint64)(unsafe.Pointer(&mem[0]))
}

// pollable returns a copy of fd registered with Go's netpoller.
func pollable(fd int) (*os.File, syscall.RawConn, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(dup), "ringbuf")
	// Only a file in the netpoller takes deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}
