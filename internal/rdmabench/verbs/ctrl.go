package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// OpNames are the control-path operations, in the order rb.h numbers them.
var OpNames = []string{"open-device", "alloc-pd", "create-cq", "create-qp", "modify-qp-init", "modify-qp-rtr",
	"modify-qp-rts", "destroy-qp", "destroy-cq", "dealloc-pd", "close-device", "reg-mr", "dereg-mr"}

// CtrlConfig describes a control-path run.
type CtrlConfig struct {
	Dev      string
	Port     int
	GIDIndex int
	Iters    int     // lives of the objects, and registrations per size
	Sizes    []int64 // reg_mr sizes
	Prefault []bool  // for each size: memory touched first (true), untouched (false), or both
}

func ops(recs []C.struct_rb_op_rec, tid int) []bench.Op {
	out := make([]bench.Op, len(recs))
	for i, r := range recs {
		out[i] = bench.Op{Name: OpNames[r.op], Size: int64(r.size), Prefault: r.prefault != 0, TID: tid,
			Start: int64(r.start), Dur: int64(r.dur)}
	}
	return out
}

// Ctrl runs the object lifecycle cfg.Iters times, then registers and
// deregisters each size cfg.Iters times for each prefault choice, all on
// one locked thread.
func Ctrl(cfg CtrlConfig) ([]bench.Op, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := int(C.rb_gettid())
	dev := cstr(cfg.Dev)
	defer C.free(unsafe.Pointer(dev))
	eb := newErrBuf()
	defer eb.free()
	recs := (*C.struct_rb_op_rec)(C.calloc(16, C.sizeof_struct_rb_op_rec))
	defer C.free(unsafe.Pointer(recs))
	var out []bench.Op
	for i := 0; i < cfg.Iters; i++ {
		n := C.rb_ctrl_objects(dev, C.int(cfg.Port), C.int(cfg.GIDIndex), recs, eb.p, 256)
		if n < 0 {
			return out, eb.err()
		}
		out = append(out, ops(unsafe.Slice(recs, int(n)), tid)...)
	}
	for _, size := range cfg.Sizes {
		for _, pf := range cfg.Prefault {
			for i := 0; i < cfg.Iters; i++ {
				n := C.rb_ctrl_mr(dev, C.size_t(size), cbool(pf), recs, eb.p, 256)
				if n < 0 {
					return out, eb.err()
				}
				out = append(out, ops(unsafe.Slice(recs, int(n)), tid)...)
			}
		}
	}
	return out, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Device is what the benchmarks need to know about a device before they
// create anything on it.
type Device struct {
	Name     string
	Ports    int
	MaxMsgSz uint32
	RoCE     bool
}

// ErrNoDevice is wrapped by CheckDevice's error when the device is absent.
var ErrNoDevice = errors.New("no RDMA device")

// CheckDevice checks that dev exists with port and a GID at gidIndex (-1:
// not checked); dev "" picks the only (or first) device.
func CheckDevice(dev string, port, gidIndex int) (Device, error) {
	name := cstr(dev)
	defer C.free(unsafe.Pointer(name))
	var d C.struct_rb_devinfo
	C.rb_devinfo(name, C.int(port), C.int(gidIndex), &d)
	all := strings.Fields(C.GoString(&d.names[0]))
	if dev == "" {
		if len(all) == 0 {
			return Device{}, fmt.Errorf("%w at all (no driver loaded? soft-RoCE: rdma link add rxe0 type rxe netdev IF)", ErrNoDevice)
		}
		return CheckDevice(all[0], port, gidIndex)
	}
	if d.found == 0 {
		have := "there is none"
		if len(all) > 0 {
			have = "there is " + strings.Join(all, ", ")
		}
		return Device{}, fmt.Errorf("%w %s (%s)", ErrNoDevice, dev, have)
	}
	if d.port_ok == 0 {
		return Device{}, fmt.Errorf("device %s has no port %d (it has %d)", dev, port, int(d.nports))
	}
	if gidIndex >= 0 && d.gid_ok == 0 {
		return Device{}, fmt.Errorf("device %s port %d has no GID at index %d (see /sys/class/infiniband/%s/ports/%d/gids)", dev, port, gidIndex, dev, port)
	}
	return Device{Name: dev, Ports: int(d.nports), MaxMsgSz: uint32(d.max_msg_sz), RoCE: d.link_layer == 2}, nil
}

// AddrOf returns the IPv4 address that a device's port carries in its GID
// table (RoCE keeps the netdev's addresses there as IPv4-mapped GIDs), the
// one at gidIndex when that is >= 0. The files are sysfs's.
func AddrOf(sysfs, dev string, port, gidIndex int) (string, error) {
	dir := filepath.Join(sysfs, "class", "infiniband", dev, "ports", strconv.Itoa(port), "gids")
	try := func(i int) (string, bool) {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			return "", false
		}
		return mappedV4(strings.TrimSpace(string(b)))
	}
	if gidIndex >= 0 {
		if a, ok := try(gidIndex); ok {
			return a, nil
		}
		return "", fmt.Errorf("GID %d of %s port %d is not an IPv4 address: give the address (-a)", gidIndex, dev, port)
	}
	ents, _ := os.ReadDir(dir)
	for i := 0; i < len(ents); i++ {
		if a, ok := try(i); ok {
			return a, nil
		}
	}
	return "", fmt.Errorf("%s port %d has no IPv4 address in its GID table (rdma_cm needs one): give the address (-a)", dev, port)
}

// mappedV4 reads a GID as sysfs prints it and returns its IPv4 address when
// it is IPv4-mapped (::ffff:a.b.c.d).
func mappedV4(gid string) (string, bool) {
	const prefix = "0000:0000:0000:0000:0000:ffff:"
	if len(gid) != 39 || !strings.HasPrefix(gid, prefix) {
		return "", false
	}
	h := strings.ReplaceAll(gid[len(prefix):], ":", "")
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&255, v>>8&255, v&255), true
}
