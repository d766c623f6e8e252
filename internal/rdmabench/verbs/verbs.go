// Package verbs runs the verbs microbenchmarks: connection setup over
// rdma_cm, the latency loops, connection churn and the control path. The
// loops are C (rb.c) compiled against rdma-core's own headers, because the
// data path (ibv_post_send, ibv_poll_cq) is inline in verbs.h and a loop
// must not pay a cgo call or the Go scheduler per iteration: one cgo call
// runs a whole series, or a chunk of a latency series (bench.ChunkSamples),
// and fills an array Go allocated. Go does the rest. Times are CLOCK_MONOTONIC ns, the tracer's clock.
package verbs

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// Op is what the latency loop measures.
type Op int

const (
	Write Op = C.RB_WRITE
	Send  Op = C.RB_SEND
	Read  Op = C.RB_READ
)

var opNames = map[Op]string{Write: "write", Send: "send", Read: "read"}

func (o Op) String() string { return opNames[o] }

// ParseOp reads "write", "send" or "read".
func ParseOp(s string) (Op, error) {
	for o, n := range opNames {
		if n == strings.ToLower(s) {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown operation %q (want write, send or read)", s)
}

// Thread is a benchmark thread, for joining with traced events.
type Thread struct {
	PID, TID int
	CPU      int // -1: not pinned
}

// LatConfig describes one latency run.
type LatConfig struct {
	Op       Op
	Dev      string // the device the address must be on ("" any)
	Addr     string // the server's address (server: the address it listens on)
	Port     int    // rdma_cm port
	Size     int
	Iters    int           // samples wanted; with Duration, the most (0: no count)
	Duration time.Duration // run for this long instead (0: Iters)
	// Consume takes each chunk of samples, on the client's thread between
	// two chunks of the loop (no sample counts the time it takes); it
	// must not keep the slice. nil: the samples are only counted.
	Consume func([]bench.Sample)
	Timeout time.Duration // a peer silent this long is dead
	CPUs    []int         // CPUs to pin to: [server, client] in one process, [0] for one end
}

// LatResult is what a latency run measured.
type LatResult struct {
	N              int    // samples taken (and handed to Consume)
	Ended          string // why the series ended: "count" (Iters) or "duration"
	Client, Server Thread // Server is zero when the server is another host
	Dev            string
	Inline         bool    // the messages went inline (size within the QP's max_inline_data)
	MaxInline      int     // the client QP's max_inline_data
	EmptyPollNs    float64 // one ibv_poll_cq that finds nothing, measured on the client's CQ
}

// ClockCost is the mean cost of one clock_gettime(CLOCK_MONOTONIC) in ns,
// over n calls.
func ClockCost(n int) float64 { return float64(C.rb_clock_cost(C.int(n))) }

// Now is CLOCK_MONOTONIC in ns as the C loops read it.
func Now() int64 { return int64(C.rb_now()) }

// endpoint is an rb_ep in C memory: C keeps pointers into it (the abort
// flag) and it must never move.
type endpoint struct{ p *C.struct_rb_ep }

func newEndpoint(abort *C.int, timeout time.Duration) endpoint {
	p := (*C.struct_rb_ep)(C.calloc(1, C.sizeof_struct_rb_ep))
	p.abort = abort
	p.timeout_ns = C.int64_t(timeout)
	return endpoint{p}
}

func (e endpoint) err(what string) error {
	return errors.New(C.GoString(&e.p.err[0]))
}

func (e endpoint) close() {
	C.rb_close(e.p)
	C.free(unsafe.Pointer(e.p))
}

// newAbort is a flag in C memory that either thread of a run sets to stop
// the other.
func newAbort() *C.int { return (*C.int)(C.calloc(1, C.sizeof_int)) }

// pin locks the goroutine to its thread and the thread to cpu (-1: no
// pin). The returned unpin gives the thread its CPUs back before unlocking
// it: a thread left pinned would go back to Go's pool and run whatever
// goroutine comes next (the tracer's reader, the GC) on that one CPU.
func pin(cpu int) (unpin func()) {
	runtime.LockOSThread()
	var was unix.CPUSet
	if cpu < 0 || unix.SchedGetaffinity(0, &was) != nil {
		return runtime.UnlockOSThread
	}
	C.rb_pin(C.int(cpu))
	return func() {
		if unix.SchedSetaffinity(0, &was) != nil {
			return // still pinned: the goroutine's exit ends the thread
		}
		runtime.UnlockOSThread()
	}
}

// PickCPUs returns two different CPUs this process may run on, or -1s when
// there is only one.
func PickCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 {
		return []int{-1, -1}
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

func cpuAt(c []int, i int) int {
	if i < len(c) {
		return c[i]
	}
	return -1
}

func cstr(s string) *C.char { return C.CString(s) }

// Lat runs both ends in this process: a server thread and a client thread,
// each locked to its own OS thread and pinned to its own CPU where there are
// two.
func Lat(cfg LatConfig) (LatResult, error) {
	abort := newAbort()
	defer C.free(unsafe.Pointer(abort))
	srv := newEndpoint(abort, cfg.Timeout)
	cli := newEndpoint(abort, cfg.Timeout)
	defer srv.close()
	defer cli.close()
	addr, dev := cstr(cfg.Addr), cstr(cfg.Dev)
	defer C.free(unsafe.Pointer(addr))
	defer C.free(unsafe.Pointer(dev))
	if C.rb_server_listen(srv.p, addr, C.int(cfg.Port)) != 0 {
		return LatResult{}, srv.err("listen")
	}
	var res LatResult
	var serr, cerr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer pin(cpuAt(cfg.CPUs, 0))()
		if C.rb_server_accept(srv.p, dev) != 0 || C.rb_lat_respond(srv.p) != 0 {
			serr = srv.err("server")
			*abort = 1
		}
	}()
	go func() {
		defer wg.Done()
		defer pin(cpuAt(cfg.CPUs, 1))()
		res, cerr = runClient(cli, cfg, addr, dev)
		if cerr != nil {
			*abort = 1
		}
	}()
	wg.Wait()
	res.Client.CPU = cpuAt(cfg.CPUs, 1)
	res.Server = Thread{PID: os.Getpid(), TID: int(srv.p.tid), CPU: cpuAt(cfg.CPUs, 0)}
	// The thread that failed first says why; the other only saw the abort.
	if cerr != nil && !strings.HasSuffix(cerr.Error(), "aborted") {
		return res, cerr
	}
	if serr != nil {
		return res, fmt.Errorf("server: %w", serr)
	}
	return res, cerr
}

// runClient connects and runs the loop on the calling (locked) thread, a
// chunk at a time, until its count or its duration is reached.
func runClient(cli endpoint, cfg LatConfig, addr, dev *C.char) (LatResult, error) {
	n := cfg.Iters
	if n < 1 && cfg.Duration <= 0 {
		return LatResult{}, fmt.Errorf("%d iterations: need at least 1", n)
	}
	if C.rb_client_connect(cli.p, addr, C.int(cfg.Port), dev, C.int(cfg.Op), C.size_t(cfg.Size), C.int(max(n, 0)),
		C.int64_t(cfg.Duration)) != 0 {
		return LatResult{}, cli.err("client")
	}
	res := LatResult{
		Client:    Thread{PID: os.Getpid(), TID: int(cli.p.tid)},
		Dev:       C.GoString(&cli.p.dev[0]),
		Inline:    cfg.Op != Read && cfg.Size <= int(cli.p.max_inline),
		MaxInline: int(cli.p.max_inline),
	}
	res.EmptyPollNs = float64(C.rb_empty_poll_cost(cli.p, 10000))
	chunk := bench.ChunkSamples
	if n > 0 {
		chunk = min(chunk, n)
	}
	buf := make([]bench.Sample, chunk)
	C.rb_lat_start(cli.p)
	for cli.p.lat_over == 0 {
		got := int(C.rb_lat_chunk(cli.p, (*C.struct_rb_sample)(unsafe.Pointer(&buf[0])), C.int(chunk)))
		if got < 0 {
			return res, cli.err("client")
		}
		res.N += got
		if cfg.Consume != nil && got > 0 {
			cfg.Consume(buf[:got])
		}
	}
	if C.rb_lat_finish(cli.p) != 0 {
		return res, cli.err("client")
	}
	res.Ended = "count"
	if cli.p.lat_over == C.RB_OVER_DURATION {
		res.Ended = "duration"
	}
	C.rb_disconnect(cli.p) // READ's server waits for it
	return res, nil
}

// LatServer serves one client of another host (rdmabench lat --server):
// the client says what to run.
func LatServer(cfg LatConfig) (Thread, error) {
	abort := newAbort()
	defer C.free(unsafe.Pointer(abort))
	srv := newEndpoint(abort, cfg.Timeout)
	defer srv.close()
	addr, dev := cstr(cfg.Addr), cstr(cfg.Dev)
	defer C.free(unsafe.Pointer(addr))
	defer C.free(unsafe.Pointer(dev))
	defer pin(cpuAt(cfg.CPUs, 0))()
	if C.rb_server_listen(srv.p, addr, C.int(cfg.Port)) != 0 {
		return Thread{}, srv.err("listen")
	}
	// Waiting for a client may take as long as it likes.
	srv.p.timeout_ns = C.int64_t(365 * 24 * time.Hour)
	if C.rb_server_accept(srv.p, dev) != 0 {
		return Thread{}, srv.err("accept")
	}
	srv.p.timeout_ns = C.int64_t(cfg.Timeout)
	th := Thread{PID: os.Getpid(), TID: int(srv.p.tid), CPU: cpuAt(cfg.CPUs, 0)}
	if C.rb_lat_respond(srv.p) != 0 {
		return th, srv.err("server")
	}
	return th, nil
}

// LatClient runs the client end against a server elsewhere.
func LatClient(cfg LatConfig) (LatResult, error) {
	abort := newAbort()
	defer C.free(unsafe.Pointer(abort))
	cli := newEndpoint(abort, cfg.Timeout)
	defer cli.close()
	addr, dev := cstr(cfg.Addr), cstr(cfg.Dev)
	defer C.free(unsafe.Pointer(addr))
	defer C.free(unsafe.Pointer(dev))
	defer pin(cpuAt(cfg.CPUs, 0))()
	res, err := runClient(cli, cfg, addr, dev)
	res.Client.CPU = cpuAt(cfg.CPUs, 0)
	return res, err
}
