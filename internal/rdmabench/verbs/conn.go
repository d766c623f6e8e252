package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// The steps of one connection, named as cmtime names them where it has them.
var (
	ClientSteps = []string{"create-id", "resolve-addr", "resolve-route", "create-qp", "connect", "disconnect", "destroy"}
	ServerSteps = []string{"create-qp", "accept", "disconnect", "destroy"}
)

// ConnConfig describes a connection-setup run.
type ConnConfig struct {
	Addr        string
	Port        int
	N           int // connections
	Concurrency int // clients connecting at once, each making its share one after another
	Timeout     time.Duration
}

func side(c *C.struct_rb_conn_side, names []string) bench.Side {
	src := netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&c.src[0]))).Unmap()
	dst := netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&c.dst[0]))).Unmap()
	s := bench.Side{PID: os.Getpid(), TID: int(c.tid),
		Src: netip.AddrPortFrom(src, uint16(c.sport)), Dst: netip.AddrPortFrom(dst, uint16(c.dport))}
	for i, n := range names {
		s.Steps = append(s.Steps, bench.Step{Name: n, Start: int64(c.steps[i].start), Dur: int64(c.steps[i].dur)})
	}
	return s
}

func sides(p *C.struct_rb_conn_side, n int) []C.struct_rb_conn_side {
	return unsafe.Slice(p, n)
}

func allocSides(n int) *C.struct_rb_conn_side {
	return (*C.struct_rb_conn_side)(C.calloc(C.size_t(n), C.sizeof_struct_rb_conn_side))
}

type errBuf struct{ p *C.char }

func newErrBuf() errBuf        { return errBuf{(*C.char)(C.calloc(256, 1))} }
func (b errBuf) err() error    { return errors.New(C.GoString(b.p)) }
func (b errBuf) free()         { C.free(unsafe.Pointer(b.p)) }
func (b errBuf) aborted() bool { return strings.HasSuffix(C.GoString(b.p), "aborted") }

// clients runs cfg.Concurrency client threads and returns their sides in
// the order they were made.
func clients(cfg ConnConfig, abort *C.int) ([]bench.Side, error) {
	c := max(1, min(cfg.Concurrency, cfg.N))
	out := make([][]bench.Side, c)
	errs := make([]error, c)
	addr := cstr(cfg.Addr)
	defer C.free(unsafe.Pointer(addr))
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		n := cfg.N / c
		if w < cfg.N%c {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			buf := allocSides(n)
			defer C.free(unsafe.Pointer(buf))
			eb := newErrBuf()
			defer eb.free()
			if C.rb_conn_client(addr, C.int(cfg.Port), C.int(n), buf, C.int64_t(cfg.Timeout), abort, eb.p, 256) < 0 {
				errs[w] = eb.err()
				if !eb.aborted() {
					*abort = 1
				}
				return
			}
			for _, s := range sides(buf, n) {
				out[w] = append(out[w], side(&s, ClientSteps))
			}
		}()
	}
	wg.Wait()
	var all []bench.Side
	for w := range out {
		if errs[w] != nil && !strings.HasSuffix(errs[w].Error(), "aborted") {
			return nil, errs[w]
		}
		all = append(all, out[w]...)
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return all, nil
}

// Conn makes cfg.N connections with both ends in this process; the server
// is one thread driven by rdma_cm events.
func Conn(cfg ConnConfig) ([]bench.Conn, error) {
	abort := newAbort()
	defer C.free(unsafe.Pointer(abort))
	var srv C.struct_rb_conn_server
	eb := newErrBuf()
	defer eb.free()
	addr := cstr(cfg.Addr)
	defer C.free(unsafe.Pointer(addr))
	if C.rb_conn_listen(&srv, addr, C.int(cfg.Port), C.int(max(cfg.Concurrency, 8)), eb.p, 256) != 0 {
		C.rb_conn_close(&srv)
		return nil, eb.err()
	}
	defer C.rb_conn_close(&srv)
	sbuf := allocSides(cfg.N)
	defer C.free(unsafe.Pointer(sbuf))
	var serr error
	var got C.int
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if got = C.rb_conn_serve(&srv, C.int(cfg.N), sbuf, C.int64_t(cfg.Timeout), abort, eb.p, 256); got < 0 {
			serr = eb.err()
			*abort = 1
		}
	}()
	cs, cerr := clients(cfg, abort)
	<-done
	if cerr != nil && !strings.HasSuffix(cerr.Error(), "aborted") {
		return nil, cerr
	}
	if serr != nil {
		return nil, fmt.Errorf("server: %w", serr)
	}
	if cerr != nil {
		return nil, cerr
	}
	// The server's peer is the client's source address.
	byPeer := map[netip.AddrPort]bench.Side{}
	for _, s := range sides(sbuf, int(got)) {
		sd := side(&s, ServerSteps)
		byPeer[sd.Dst] = sd
	}
	conns := make([]bench.Conn, len(cs))
	for i, c := range cs {
		conns[i] = connOf(i, c, byPeer[c.Src])
	}
	return conns, nil
}

func connOf(i int, c, s bench.Side) bench.Conn {
	last := c.Steps[len(c.Steps)-1]
	return bench.Conn{Index: i + 1, Client: c, Server: s, Start: c.Steps[0].Start, End: last.Start + last.Dur}
}

// ConnClient connects to a server elsewhere (any rdma_cm server that
// accepts and disconnects, e.g. rdmabench conn --server).
func ConnClient(cfg ConnConfig) ([]bench.Conn, error) {
	abort := newAbort()
	defer C.free(unsafe.Pointer(abort))
	cs, err := clients(cfg, abort)
	if err != nil {
		return nil, err
	}
	conns := make([]bench.Conn, len(cs))
	for i, c := range cs {
		conns[i] = connOf(i, c, bench.Side{})
	}
	return conns, nil
}

// ConnServer accepts cfg.N connections and returns the server's sides.
func ConnServer(cfg ConnConfig) ([]bench.Side, error) {
	var srv C.struct_rb_conn_server
	eb := newErrBuf()
	defer eb.free()
	addr := cstr(cfg.Addr)
	defer C.free(unsafe.Pointer(addr))
	defer C.rb_conn_close(&srv)
	if C.rb_conn_listen(&srv, addr, C.int(cfg.Port), C.int(max(cfg.Concurrency, 8)), eb.p, 256) != 0 {
		return nil, eb.err()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sbuf := allocSides(cfg.N)
	defer C.free(unsafe.Pointer(sbuf))
	got := C.rb_conn_serve(&srv, C.int(cfg.N), sbuf, C.int64_t(365*24*time.Hour), nil, eb.p, 256)
	if got < 0 {
		return nil, eb.err()
	}
	var out []bench.Side
	for _, s := range sides(sbuf, int(got)) {
		out = append(out, side(&s, ServerSteps))
	}
	return out, nil
}
