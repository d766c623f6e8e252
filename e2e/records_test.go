//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// place is where an owner runs, as rdmatrace's JSON gives it beside
// iproute2's keys (res -j, ps -j) or in an event's (trace -j: read into
// rdma.Placement, see placeOf).
type place struct {
	Cgroup      string `json:"cgroup"`
	Runtime     string `json:"runtime"`
	ContainerID string `json:"container-id"`
	Job         string `json:"job"`
	PodUID      string `json:"pod-uid"`
	PidnsPID    uint32 `json:"pidns-pid"`
	NetNS       uint64 `json:"netns"`
}

// placeOf is an event's owner's place; empty without one.
func placeOf(p *rdma.Placement) place {
	if p == nil {
		return place{}
	}
	return place{Cgroup: p.Cgroup, Runtime: p.Runtime, ContainerID: p.ContainerID, Job: p.Job(), PodUID: p.PodUID, PidnsPID: p.NSPid, NetNS: p.NetNS}
}

// keys gives the place's keys as the JSON spells them and their values as
// text ("" for a key left out).
func (p place) keys() map[string]string {
	num := func(n uint64) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	return map[string]string{"cgroup": p.Cgroup, "runtime": p.Runtime, "container-id": p.ContainerID, "job": p.Job, "pod-uid": p.PodUID,
		"pidns-pid": num(uint64(p.PidnsPID)), "netns": num(p.NetNS)}
}

// resRow is an object of `rdmatrace res TYPE -j` or `rdmatrace ps -j`
// with the keys the tests read: iproute2's, and the owner's place.
type resRow struct {
	Ifname  string  `json:"ifname"`
	LQPN    *uint32 `json:"lqpn"`
	Type    string  `json:"type"`
	PID     *uint32 `json:"pid"`
	TGID    *uint32 `json:"tgid"`
	Cmdline string  `json:"cmdline"`
	Comm    string  `json:"comm"`
	place
}

// owner is the row's process: its "tgid", else its "pid"; 0 without one.
func (r *resRow) owner() int {
	switch {
	case r.TGID != nil:
		return int(*r.TGID)
	case r.PID != nil:
		return int(*r.PID)
	}
	return 0
}

// pid is the row's "pid" as text, "" without one.
func (r *resRow) pid() string {
	if r.PID == nil {
		return ""
	}
	return fmt.Sprint(*r.PID)
}

// resSummary is a row of `rdma -j res show`: a device's count of each
// resource type (a type the kernel does not count is left out).
type resSummary struct {
	Ifname string `json:"ifname"`
	resCounts
}

// resCounts are counts of each resource type, as `res -j` and `ps -j`
// give them.
type resCounts struct {
	PD   *float64 `json:"pd"`
	CQ   *float64 `json:"cq"`
	QP   *float64 `json:"qp"`
	CMID *float64 `json:"cm_id"`
	MR   *float64 `json:"mr"`
	CTX  *float64 `json:"ctx"`
	SRQ  *float64 `json:"srq"`
}

// count is the row's count of typ (pd, cq, qp, cm_id, mr, ctx, srq); false
// when the row has none.
func (s *resCounts) count(typ string) (float64, bool) {
	n := map[string]*float64{"pd": s.PD, "cq": s.CQ, "qp": s.QP, "cm_id": s.CMID, "mr": s.MR, "ctx": s.CTX, "srq": s.SRQ}[typ]
	if n == nil {
		return 0, false
	}
	return *n, true
}

// owned is an object of `rdmatrace res TYPE -j` with its owner, of any
// type.
type owned struct {
	PID  *uint32 `json:"pid"`
	Comm *string `json:"comm"`
}

// cmIDRow is a cm_id of `rdmatrace res cm_id -j`, or a row of `rdmatrace
// parse -j` read from the legacy layout: the keys the two share.
type cmIDRow struct {
	Ifname  *string `json:"ifname,omitempty"`
	Port    *uint32 `json:"port,omitempty"`
	State   *string `json:"state,omitempty"`
	PS      *string `json:"ps,omitempty"`
	Src     *string `json:"src-addr,omitempty"`
	Dst     *string `json:"dst-addr,omitempty"`
	PID     *uint32 `json:"pid,omitempty"`
	Comm    *string `json:"comm,omitempty"`
	LQPN    *uint32 `json:"lqpn,omitempty"`
	DevType *string `json:"dev-type,omitempty"`
	Netdev  *string `json:"netdev,omitempty"`
}

// text is a value as the tests print it: <nil> for a key left out.
func text[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// doctorCheck is one check of `rdmatrace doctor -j`.
type doctorCheck struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// countsRow is a row of `rdmatrace ps -j` (a process's, or a kernel
// module's, count of each type) or of `rdmatrace res -j` (a device's), or
// a device of `dev -j`.
type countsRow struct {
	Ifname   string `json:"ifname"`
	KernName string `json:"kern-name"`
	resCounts
}

// devRow is a device of `rdma dev -j` or `rdmatrace dev -j`, with the
// namespace a --netns listing found it in.
type devRow struct {
	Ifname    string `json:"ifname"`
	NetnsName string `json:"netns-name"`
}

// finding is one record of `rdmatrace leaks -j` (a finding, or the
// unregistered and kernel-log reports), with the keys the tests read.
type finding struct {
	Report      string   `json:"report"`
	Res         string   `json:"res"`
	Ifname      string   `json:"ifname"`
	PID         *uint32  `json:"pid"`
	TGID        *uint32  `json:"tgid"`
	Comm        string   `json:"comm"`
	KernName    string   `json:"-"` // a kernel owner: comm without pid, as iproute2 writes it
	Cleanup     string   `json:"cleanup"`
	LQPN        *uint32  `json:"lqpn"`
	ID          *uint32  `json:"id"`
	CgroupID    *uint64  `json:"cgroup-id"`
	Left        *uint64  `json:"left"`
	FreedAtExit *uint64  `json:"freed-at-exit"`
	Kind        string   `json:"kind"`
	Func        string   `json:"func"`
	Holders     []string `json:"holders"`
	line        string   // as printed
}

func (f finding) String() string { return f.line }

// readFinding reads one line of `leaks -j`.
func readFinding(t *testing.T, what, line string) finding {
	t.Helper()
	f := finding{line: line}
	if err := json.Unmarshal([]byte(line), &f); err != nil {
		t.Fatalf("%s line %q: %v", what, line, err)
	}
	if f.PID == nil && f.Res != "" {
		f.KernName = f.Comm
	}
	return f
}
