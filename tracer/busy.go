package tracer

import (
	"io/fs"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/rdmatrace/rdmatrace/bpf"
)

// Port-busy events are auxiliary to the lifecycle events and limited in
// the kernel (bpf/ports.h, reserve_busy): a failed TCP bind is reported
// only while an iWARP device exists; each event takes a token from its
// process's bucket (one a second, the next shown carrying how many were
// held back), its user's in its cgroup (four a second) and everyone's
// (sixteen a second); and they may fill only a quarter of the ring buffer.
// Beyond them, whoever makes most events (a user in a cgroup) may fill
// only three quarters (bpf/common.h, share_admit).

// BusySuppressed is how many port-busy events the rate limit held back:
// those carried by a later event (Event.Suppressed) and those no later
// event has carried yet.
func (t *Tracer) BusySuppressed() (uint64, error) { return t.perCPUSum("busy_suppressed") }

// BusyDrops is how many port-busy events were lost: refused as the ring
// buffer was a quarter full (the rest is kept for lifecycle events), or
// found it full. They are not in Drops.
func (t *Tracer) BusyDrops() (uint64, error) { return t.perCPUSum("busy_drops") }

// Shed is how many events were refused because their owner was the
// busiest and the ring three quarters full: the last quarter is kept for
// the other owners. They are not in Drops.
func (t *Tracer) Shed() (uint64, error) { return t.perCPUSum("shed") }

// AuxShed is how many auxiliary records (a modify's QP settings, spans,
// off-CPU spells) were refused as the ring was half full, to keep the rest
// for the lifecycle events (bpf/common.h, aux_shed_first). They are not
// in Drops.
func (t *Tracer) AuxShed() (uint64, error) { return t.perCPUSum("aux_shed") }

// Busiest is the owner the ring's share holds to three quarters, as the
// kernel's vote stands now: a user (NoUID for kernel threads) in a cgroup.
// ok is false when no owner leads by enough to be held.
func (t *Tracer) Busiest() (uid uint32, cgroup uint64, ok bool) {
	var v bpf.RdmatraceShareVote
	if m := t.maps["busiest"]; m == nil || m.Lookup(uint32(0), &v) != nil {
		return 0, 0, false
	}
	return v.Uid, v.Cgroup, v.Votes >= shareVotesMin
}

// NoUID is the uid Busiest gives kernel threads (bpf/common.h's NO_UID).
const NoUID = 0xffffffff

// shareVotesMin is bpf/common.h's SHARE_VOTES_MIN: the lead that makes an
// owner the busiest.
const shareVotesMin = 64

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
