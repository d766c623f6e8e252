package filter

import (
	"fmt"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// EventKeys are the filter keys of traced events (trace and leaks), each
// also a --filter-KEY flag. pid, comm and dev mean what they mean for
// `rdmatrace res`; res is the resource type, event the kind of event.
var EventKeys = []string{"cgroup", "comm", "container", "dev", "event", "job", "pid", "pod", "res"}

// Events selects traced events by owner, device, type and kind.
type Events struct {
	pids  []numRange
	comms map[string]bool
	devs  map[string]bool
	res   map[rdma.ResType]bool
	kinds map[rdma.EventKind]bool
	// cmErrors and failures are the event words cm-error and failure,
	// which select by what an event says (rdma.Event.Failure), not by
	// its kind alone.
	cmErrors, failures bool
	// places are the place keys' wanted values, by key.
	places map[string][]string
	// KernelOnly and UserOnly keep the objects of kernel modules, or of
	// processes.
	KernelOnly, UserOnly bool
}

// ParseEvents reads "[TYPE] KEY VALUE..." (iproute2's form: `qp pid 1234
// comm rping`), with the values of `rdmatrace res`: numbers take comma
// lists and ranges, names take comma lists. A key given twice takes the
// union of its values.
func ParseEvents(words []string) (*Events, error) {
	f := &Events{comms: map[string]bool{}, devs: map[string]bool{}, res: map[rdma.ResType]bool{}, kinds: map[rdma.EventKind]bool{},
		places: map[string][]string{}}
	if len(words)%2 == 1 {
		t, err := rdma.ParseResType(words[0])
		if err != nil {
			return nil, fmt.Errorf("%w (or a filter: %s)", err, strings.Join(EventKeys, ", "))
		}
		f.res[t] = true
		words = words[1:]
	}
	for i := 0; i+1 < len(words); i += 2 {
		name, value := strings.ToLower(words[i]), words[i+1]
		parts := strings.Split(value, ",")
		for _, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("filter %s: empty value in %q", name, value)
			}
		}
		switch name {
		case "pid":
			tm, err := parseTerm(keyPID, value)
			if err != nil {
				return nil, fmt.Errorf("filter pid: %w", err)
			}
			f.pids = append(f.pids, tm.nums...)
		case "comm":
			for _, p := range parts {
				f.comms[p] = true
			}
		case "dev":
			for _, p := range parts {
				f.devs[p] = true
			}
		case "res":
			for _, p := range parts {
				t, err := rdma.ParseResType(p)
				if err != nil {
					return nil, fmt.Errorf("filter res: %w", err)
				}
				f.res[t] = true
			}
		case "event":
			for _, p := range parts {
				switch strings.ToLower(p) {
				case WordCMError:
					f.cmErrors = true
					continue
				case WordFailure:
					f.failures = true
					continue
				}
				ks, err := rdma.ParseEventKind(p)
				if err != nil {
					return nil, fmt.Errorf("filter event: %w; or %s (rdma_cm events that report an error), %s (every failure)", err, WordCMError, WordFailure)
				}
				for _, k := range ks {
					f.kinds[k] = true
				}
			}
		case "cgroup", "container", "pod", "job":
			f.places[name] = append(f.places[name], parts...)
		default:
			return nil, fmt.Errorf("unknown event filter %q: valid filters are %s", words[i], strings.Join(EventKeys, ", "))
		}
	}
	return f, nil
}

// Match reports whether e passes every filter. pid matches the owner's
// thread or process id.
func (f *Events) Match(e *rdma.Event) bool {
	if len(f.pids) > 0 && !(e.Has(rdma.EvHasOwner) && (inRanges(f.pids, uint64(e.Owner.PID)) || inRanges(f.pids, uint64(e.Owner.TID)))) {
		return false
	}
	if len(f.comms) > 0 && !f.comms[e.Owner.Comm] && !f.comms[e.Owner.KernName] {
		return false
	}
	if len(f.devs) > 0 && !f.devs[e.DevName] {
		return false
	}
	if len(f.res) > 0 && !(e.Has(rdma.EvHasRes) && f.res[e.Type]) {
		return false
	}
	if (len(f.kinds) > 0 || f.cmErrors || f.failures) && !f.kinds[e.Kind] && !f.failing(e) {
		return false
	}
	if !f.MatchPlace(e.Owner.Place) {
		return false
	}
	if f.KernelOnly && e.Owner.KernName == "" {
		return false
	}
	if f.UserOnly && !e.Has(rdma.EvUser) {
		return false
	}
	return true
}

// The event words that select by what an event reports.
const (
	// WordCMError: rdma_cm events with an error event or a non-zero status.
	WordCMError = "cm-error"
	// WordFailure: every failure rdma.Event.Failure knows (cm-error, a QP
	// moved to ERR or SQE, a destroy the driver refused, a port taken, an
	// SMC fallback or link down, and the kinds added to it).
	WordFailure = "failure"
)

// failing says whether e is one of the failures the cm-error and failure
// words ask for.
func (f *Events) failing(e *rdma.Event) bool {
	if !f.cmErrors && !f.failures {
		return false
	}
	if _, ok := e.Failure(); !ok {
		return false
	}
	return f.failures || e.Kind == rdma.EvCMEventHandler
}

func inRanges(rs []numRange, v uint64) bool {
	for _, r := range rs {
		if v >= r.lo && v <= r.hi {
			return true
		}
	}
	return false
}

func anyWithin(name, v string, wants []string) bool {
	for _, w := range wants {
		if placeWithin(name, v, w) {
			return true
		}
	}
	return false
}

// PIDs is the pid filter as a set, when there is one of at most max
// pids (ranges expanded): what the kernel can check itself.
func (f *Events) PIDs(max int) ([]uint32, bool) {
	if len(f.pids) == 0 {
		return nil, false
	}
	var out []uint32
	for _, r := range f.pids {
		if r.hi-r.lo >= uint64(max) || r.hi > 1<<32-1 {
			return nil, false
		}
		for p := r.lo; p <= r.hi; p++ {
			out = append(out, uint32(p))
		}
		if len(out) > max {
			return nil, false
		}
	}
	return out, true
}

// HasPlace says whether a cgroup, container, pod or job filter is given.
func (f *Events) HasPlace() bool { return len(f.places) > 0 }

// MatchPlace says whether a process placed at p passes the cgroup,
// container, pod and job filters (all of them, as Match does).
func (f *Events) MatchPlace(p *rdma.Placement) bool {
	for name, wants := range f.places {
		v, ok := placeValue(name, p)
		if !ok || !anyWithin(name, v, wants) {
			return false
		}
	}
	return true
}
