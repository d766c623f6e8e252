package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A Frame is what a refresh shows: the node's totals, a row per owner and
// per device, and what the header says of the source and the ports.
type Frame struct {
	Time time.Time
	// Interval is the time the rates are counted over (since the
	// previous frame).
	Interval time.Duration
	By       By
	// Source says where the events come from: "BPF" or "netlink".
	Source Source
	Node   Row
	Owners []Row // unsorted; Sort orders them
	// Devices are the devices seen, by name.
	Devices []Row
	Ports   []rdma.Port
	// PortsErr says why the ports could not be listed.
	PortsErr string
	// Drops are the events the kernel could not queue (BPF only);
	// DropsKnown says whether the source counts them.
	Drops      uint64
	DropsKnown bool
	// OwnersFolded counts the owners counted in the "other" row, past
	// MaxOwners; Untracked the objects created while MaxObjects were
	// followed (counted in the rates, not in the live columns).
	OwnersFolded uint64
	MaxOwners    int
	Untracked    uint64
	// Notes are what the source said since the previous frame (a full
	// screen shows them in its last line; batch mode on stderr).
	Notes []string
}

// Source is where a top's events come from.
type Source struct {
	// BPF: the tracer's events; else RDMA netlink's dumps compared every
	// Poll, and the monitor group's device events (Monitor).
	BPF     bool
	Hooks   int // hooks attached (BPF)
	Poll    time.Duration
	Monitor bool
	// Why is why there is no BPF ("": it was not tried).
	Why string
}

// String is the header's words for the source.
func (s Source) String() string {
	if s.BPF {
		return fmt.Sprintf("BPF (%d hooks)", s.Hooks)
	}
	w := fmt.Sprintf("netlink, polled every %v", s.Poll)
	if s.Monitor {
		w += " and the monitor group"
	}
	return w + ": no rdma_cm events (connects), nor what lives between two polls"
}

// A Row is an owner's or a device's numbers, or the node's.
type Row struct {
	// Name is the owner (a process's comm, a kernel module, a pod UID, a
	// job id, a container id), the device, or "other" for the owners past
	// the bound; PID is a process's; Place the runtime of a container.
	Name   string
	PID    uint32
	Kernel bool
	Other  bool
	Place  string
	Counts
	// Per second over the frame's interval.
	CreateRate, DestroyRate, ConnectRate, FailRate float64
	// LastFailure is the last failure in words, at LastFailureAt.
	LastFailure   string
	LastFailureAt time.Time
}

// Label is how a row names its owner: comm[pid], a module (kernel), a
// place, or "-" for the processes outside any place with --by.
func (r *Row) Label(by By) string {
	switch {
	case r.Other:
		return "other"
	case r.Kernel:
		return r.Name + " (kernel)"
	case by == ByProcess && r.PID != 0:
		return fmt.Sprintf("%s[%d]", r.Name, r.PID)
	case by != ByProcess && r.Name == "":
		return "(no " + by.String() + ")"
	}
	return r.Name
}

// Frame takes a frame at now: rates since the previous one, rows of
// owners that hold something or did something lately.
func (a *Aggregator) Frame(now time.Time) *Frame {
	for _, h := range a.quiet.Expire(now) { // moves to ERR nothing settled
		a.countHeld(h)
	}
	a.sweep()
	iv := now.Sub(a.last)
	if iv <= 0 {
		iv = time.Nanosecond
	}
	f := &Frame{Time: now, Interval: iv, By: a.by, OwnersFolded: a.foldedN, MaxOwners: a.maxOwners, Untracked: a.untracked}
	f.Node = a.row(&a.node, iv)
	for i := range a.owners {
		s := &a.owners[i]
		if !s.used {
			continue
		}
		active := s.TotalLive() != 0 || s.seen+lingerFrames > a.frames || s.Creates != s.prev.Creates
		if i == 0 {
			if active && (s.Creates+s.Destroys+s.Failures+s.Connects != 0 || s.TotalLive() != 0) {
				r := a.row(s, iv)
				r.Other = true
				f.Owners = append(f.Owners, r)
			}
			continue
		}
		if !active {
			// Nothing alive and nothing done for a while: a process gone.
			delete(a.ownerIdx, s.key)
			*s = slot{}
			a.freeOwn = append(a.freeOwn, int32(i))
			continue
		}
		r := a.row(s, iv)
		r.PID, r.Kernel, r.Place = s.key.pid, s.key.kern != "", s.place
		if a.by != ByProcess && !r.Kernel {
			r.Name = s.key.place
		}
		f.Owners = append(f.Owners, r)
	}
	for i := range a.devs {
		f.Devices = append(f.Devices, a.row(&a.devs[i], iv))
	}
	slices.SortFunc(f.Devices, func(x, y Row) int { return strings.Compare(x.Name, y.Name) })
	a.last = now
	a.frames++
	return f
}

// lingerFrames is how many frames an owner row with nothing alive stays
// after its last event: long enough to read its destroys.
const lingerFrames = 3

// row is s as a Row at a frame over iv; its counts become the base of
// the next frame's rates.
func (a *Aggregator) row(s *slot, iv time.Duration) Row {
	sec := iv.Seconds()
	rate := func(now, then uint64) float64 { return float64(now-then) / sec }
	r := Row{Name: s.name, Counts: s.Counts,
		CreateRate: rate(s.Creates, s.prev.Creates), DestroyRate: rate(s.Destroys, s.prev.Destroys),
		ConnectRate: rate(s.Connects, s.prev.Connects), FailRate: rate(s.Failures, s.prev.Failures),
		LastFailure: s.failWhy, LastFailureAt: s.failAt}
	s.prev = s.Counts
	return r
}

// SortKey is a column the owner rows can be sorted by.
type SortKey uint8

const (
	SortCreates  SortKey = iota // creates per second, then live objects
	SortLive                    // live objects
	SortQPs                     // live QPs
	SortFailures                // failures per second, then in all
	SortConnects                // connections per second
	SortName                    // the owner's name
	numSortKeys
)

var sortNames = [numSortKeys]string{"creates", "live", "qp", "failures", "connects", "name"}

func (k SortKey) String() string { return sortNames[k] }

// Next is the key after k, for a key that cycles through them.
func (k SortKey) Next() SortKey { return (k + 1) % numSortKeys }

// ParseSortKey reads --sort's word.
func ParseSortKey(s string) (SortKey, error) {
	for i, n := range sortNames {
		if s == n {
			return SortKey(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sort key %q: expected %s", s, strings.Join(sortNames[:], ", "))
}

// SortKeys lists the sort keys' words.
func SortKeys() []string { return sortNames[:] }

// Sort orders rows by key, the largest first (by name: alphabetical),
// ties by name and pid; "other" comes last.
func Sort(rows []Row, key SortKey, by By) {
	slices.SortStableFunc(rows, func(x, y Row) int {
		if x.Other != y.Other {
			if x.Other {
				return 1
			}
			return -1
		}
		var c int
		switch key {
		case SortCreates:
			c = cmp.Or(cmp.Compare(y.CreateRate, x.CreateRate), cmp.Compare(y.TotalLive(), x.TotalLive()))
		case SortLive:
			c = cmp.Compare(y.TotalLive(), x.TotalLive())
		case SortQPs:
			c = cmp.Compare(y.Live[rdma.ResQP], x.Live[rdma.ResQP])
		case SortFailures:
			c = cmp.Or(cmp.Compare(y.FailRate, x.FailRate), cmp.Compare(y.Failures, x.Failures))
		case SortConnects:
			c = cmp.Compare(y.ConnectRate, x.ConnectRate)
		}
		return cmp.Or(c, strings.Compare(x.Label(by), y.Label(by)), cmp.Compare(x.PID, y.PID))
	})
}

// MinDelay is the shortest time between two frames.
const MinDelay = 100 * time.Millisecond

// ParseDelay reads -d as top does, seconds ("1", "0.5"), or a Go duration
// ("500ms").
func ParseDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		sec, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || sec != sec || sec > 86400 {
			return 0, fmt.Errorf("%q: expected seconds (1, 0.5) or a duration (500ms)", s)
		}
		d = time.Duration(sec * float64(time.Second))
	}
	if d < MinDelay {
		return 0, fmt.Errorf("%q: expected at least %v", s, MinDelay)
	}
	return d, nil
}
