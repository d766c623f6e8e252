package tracer

import (
	"io/fs"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// Port-busy events are auxiliary to the lifecycle events and limited in
// the kernel (bpf/ports.h, reserve_busy): a failed TCP bind is
// reported only while an iWARP device exists, each process, port and
// operation gets one event a second (the next carrying how many were held
// back), and they may fill only a quarter of the ring buffer.

// BusySuppressed is how many port-busy events the rate limit held back:
// those carried by a later event (Event.Suppressed) and those no later
// event has carried yet.
func (t *Tracer) BusySuppressed() (uint64, error) { return t.perCPUSum("busy_suppressed") }

// BusyDrops is how many port-busy events were lost: refused as the ring
// buffer was a quarter full (the rest is kept for lifecycle events), or
// found it full. They are not in Drops.
func (t *Tracer) BusyDrops() (uint64, error) { return t.perCPUSum("busy_drops") }

// iwarpDevices counts the iWARP devices (node type "4: RNIC") in
// /sys/class/infiniband of sysfs (the root of a file system holding
// class/infiniband).
func iwarpDevices(sysfs fs.FS) int {
	devs, err := fs.ReadDir(sysfs, "class/infiniband")
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range devs {
		b, err := fs.ReadFile(sysfs, "class/infiniband/"+d.Name()+"/node_type")
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "4:") {
			n++
		}
	}
	return n
}

// seedIWarp tells the BPF programs how many iWARP devices exist before
// the register and unregister hooks attach; they count from there.
func seedIWarp(m *ebpf.Map, devs int) error {
	if m == nil {
		return nil
	}
	return m.Put(uint32(0), bpf.RdmatraceIwarpState{Devs: int64(devs), AtStart: int64(devs)})
}
