// Package health says whether this node's RDMA is fit to take work now:
// its ports up (at their speed), no fatal event, port flap, storm of QP
// errors or of failed creates in a short window, a RoCE v2 GID for each
// address of a RoCE port's netdev, and headroom on the rdma cgroup
// limits. Each check is a function over a gathered State; the verdict is
// what node-problem-detector's custom plugins and Slurm's prolog and NHC
// read from an exit status.
package health

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Status is a check's outcome.
type Status uint8

const (
	OK Status = iota
	// Problem: the node is not fit for work.
	Problem
	// Unknown: what the check needs could not be read.
	Unknown
	// Skipped: not asked for, or not possible here (said why).
	Skipped
)

func (s Status) String() string {
	return [...]string{"ok", "problem", "unknown", "skipped"}[s]
}

// Finding is one check's outcome about one thing (a port, a cgroup...).
type Finding struct {
	Check  string // ports, events, gids, limits
	Status Status
	Detail string
}

// Verdict is the node's: Problem when any finding is one; else OK when
// any check could tell (what could not be told is said beside the
// verdict, as the checks not possible here are); Unknown when none could.
// A gate that answered "could not tell" whenever one source was missing
// (no cgroup v2, no tracer) would drain nodes for what they lack, not for
// what is wrong with them.
func Verdict(fs []Finding) Status {
	v := Unknown
	for _, f := range fs {
		switch f.Status {
		case Problem:
			return Problem
		case OK:
			v = OK
		}
	}
	return v
}

// ExitCode is the verdict as node-problem-detector and NHC read it: 0
// healthy, 1 not, 2 could not tell.
func ExitCode(v Status) int {
	switch v {
	case OK:
		return 0
	case Problem:
		return 1
	}
	return 2
}

// Port is a port as sysfs shows it.
type Port struct {
	Dev       string
	Port      uint32
	State     string // ACTIVE, DOWN, INIT... (sysfs "4: ACTIVE" without the number)
	PhysState string // LinkUp, Disabled, Polling...
	// Rate is sysfs's text ("100 Gb/sec (4X EDR)"), Gbps its number (0
	// when it could not be read).
	Rate      string
	Gbps      float64
	LinkLayer string // InfiniBand, Ethernet
	Netdev    string // the netdev of GID 0 (RoCE), "" on IB
}

// CgroupLimit is one cgroup's rdma.max and rdma.current for a device.
type CgroupLimit struct {
	Path         string // from the hierarchy's root
	Dev          string
	Resource     string // hca_handle, hca_object
	Max, Current int64
}

// Window is what was seen over a short time: the events a trace gave
// (Source "trace"), or the ports' states polled and the QPs in ERR from
// RDMA netlink (Source "netlink").
type Window struct {
	Source string
	Length time.Duration
	// Why says what the source cannot see ("no BPF: ...").
	Why    string
	Events []rdma.Event
	// PortStates are the states each port ("dev/port") went through, by
	// polling, in order (netlink source).
	PortStates map[string][]string
	// QPsInErr is how many QPs RDMA netlink listed in ERR at the end, by
	// device (netlink source); QPsErr why they could not be listed.
	QPsInErr map[string]int
	QPsErr   error
	readyErr error
}

// State is what the checks read.
type State struct {
	Ports []Port
	// PortsErr is why the ports could not be read.
	PortsErr error
	GIDs     []rdma.GIDEntry
	GIDsErr  error
	// Addrs are each netdev's addresses (of our network namespace); a
	// netdev missing from it could not be read.
	Addrs map[string][]netip.Addr
	// Cgroups are the limited rdma cgroup resources; CgroupsErr why they
	// could not be read; CgroupsSkip why there is nothing to read here
	// (no cgroup v2 hierarchy, no rdma controller).
	Cgroups     []CgroupLimit
	CgroupsErr  error
	CgroupsSkip string
	// Window is nil when no window was asked for (--since 0).
	Window *Window
}

// Options are what health is asked.
type Options struct {
	// Since is the window's length: events seen during it are judged (0:
	// none; the checks of the node's state only).
	Since time.Duration
	// Gbps is the speed every port must run at (0: any).
	Gbps float64
	// Dev keeps one device ("": all).
	Dev string
	// QPErrors and FailedCreates are the storms: that many QP failures,
	// or failed creates, in the window is one.
	QPErrors, FailedCreates int
	// Headroom is the share of a cgroup limit that must stay free.
	Headroom float64
	// NoBPF, when set, is why the window is to be read without the
	// tracer (netlink and sysfs polled instead).
	NoBPF string
}

// Defaults for Options.
const (
	DefaultQPErrors      = 10
	DefaultFailedCreates = 10
	DefaultHeadroom      = 0.1
)

// Validate says which option is out of its range.
func (o Options) Validate() error {
	switch {
	case o.Since < 0 || o.Since > time.Hour:
		return fmt.Errorf("--since %v: expected a duration from 0 to 1h such as 10s", o.Since)
	case !(o.Gbps >= 0) || math.IsInf(o.Gbps, 0):
		return fmt.Errorf("--speed %g: expected a speed in Gb/s such as 100", o.Gbps)
	case o.QPErrors < 1 || o.FailedCreates < 1:
		return errors.New("--qp-errors and --failed-creates: expected a count of 1 or more")
	case !(o.Headroom >= 0 && o.Headroom < 1):
		return fmt.Errorf("--headroom %g: expected a share from 0 to below 1, such as 0.1", o.Headroom)
	}
	return nil
}

// Check runs every check over s.
func Check(s *State, o Options) []Finding {
	var fs []Finding
	fs = append(fs, CheckPorts(s, o)...)
	fs = append(fs, CheckEvents(s, o)...)
	fs = append(fs, CheckGIDs(s)...)
	fs = append(fs, CheckCgroups(s, o)...)
	return fs
}

func portName(p *Port) string { return fmt.Sprintf("%s/%d", p.Dev, p.Port) }

// CheckPorts: each port ACTIVE and its physical link up, at o.Gbps when
// given; no port at all is a problem (a node meant for RDMA work).
func CheckPorts(s *State, o Options) []Finding {
	if s.PortsErr != nil {
		return []Finding{{Check: "ports", Status: Unknown, Detail: "the ports could not be read: " + s.PortsErr.Error()}}
	}
	if len(s.Ports) == 0 {
		what := "no RDMA port"
		if o.Dev != "" {
			what = "no RDMA device " + o.Dev
		}
		return []Finding{{Check: "ports", Status: Problem, Detail: what + " (is the driver loaded? /sys/class/infiniband lists none)"}}
	}
	var fs []Finding
	for i := range s.Ports {
		p := &s.Ports[i]
		nd := ""
		if p.Netdev != "" {
			nd = ", netdev " + p.Netdev
		}
		switch {
		case p.State != "ACTIVE":
			fs = append(fs, Finding{Check: "ports", Status: Problem, Detail: fmt.Sprintf("%s is %s (physical state %s%s)", portName(p), p.State, p.PhysState, nd)})
		case o.Gbps > 0 && p.Gbps == 0:
			fs = append(fs, Finding{Check: "ports", Status: Unknown, Detail: fmt.Sprintf("%s: its rate %q could not be read as a speed", portName(p), p.Rate)})
		case o.Gbps > 0 && p.Gbps < o.Gbps:
			fs = append(fs, Finding{Check: "ports", Status: Problem, Detail: fmt.Sprintf("%s runs at %s, not the %g Gb/s expected%s", portName(p), p.Rate, o.Gbps, nd)})
		default:
			fs = append(fs, Finding{Check: "ports", Status: OK, Detail: fmt.Sprintf("%s ACTIVE, %s%s", portName(p), p.Rate, nd)})
		}
	}
	return fs
}

// CheckEvents judges the window: a fatal event of a device
// (DEVICE_FATAL, a device removed under its users), a port that left
// ACTIVE, o.QPErrors QP errors on a device (a move to ERR that was no
// connection's end, a QP_SQE, a driver's move, a first error completion,
// a QP's, CQ's or SRQ's asynchronous error), or o.FailedCreates failed
// creates.
func CheckEvents(s *State, o Options) []Finding {
	w := s.Window
	if w == nil {
		return []Finding{{Check: "events", Status: Skipped, Detail: "no window (--since 0): the node's state only"}}
	}
	var fs []Finding
	if w.Source == "trace" {
		fs = append(fs, traceFindings(w, o)...)
	} else {
		fs = append(fs, pollFindings(w, o)...)
	}
	if len(fs) == 0 {
		d := fmt.Sprintf("nothing wrong in %v (from the %s)", w.Length, sourceName(w))
		fs = append(fs, Finding{Check: "events", Status: OK, Detail: d})
	}
	return fs
}

func sourceName(w *Window) string {
	if w.Source == "trace" {
		return "tracer's events"
	}
	s := "ports' states polled and RDMA netlink's QPs: fatal events and failed creates are not seen"
	if w.Why != "" {
		s += ", " + w.Why
	}
	return s
}

func traceFindings(w *Window, o Options) []Finding {
	var fs []Finding
	fatal, flaps := map[string]string{}, map[string]bool{}
	qpErrs, fails := map[string]int{}, map[string]int{}
	lastQP, lastFail := map[string]string{}, map[string]string{}
	quiet := newQuiet()
	count := func(e *rdma.Event, why string) {
		qpErrs[devOf(e)]++
		lastQP[devOf(e)] = why
	}
	for i := range w.Events {
		e := &w.Events[i]
		for _, h := range quiet.Observe(e) {
			count(&h.e, h.why)
		}
		f, ok := e.Failure()
		if !ok {
			continue
		}
		switch {
		case e.Kind == rdma.EvAsync && e.Fault.IBEvent == rdma.IBEventPortErr:
			flaps[devPort(e)] = true
		case e.Kind == rdma.EvAsync && e.Fault.IBEvent == rdma.IBEventDeviceFatal,
			e.Kind == rdma.EvCMEventHandler && e.CMEvent == rdma.CMEvDeviceRemoval:
			if _, seen := fatal[devOf(e)]; !seen {
				fatal[devOf(e)] = f.What + ": " + f.Why
			}
		case e.Kind == rdma.EvCallFail:
			fails[devOf(e)]++
			lastFail[devOf(e)] = f.Why
		case e.Kind == rdma.EvModify:
			if quiet.Failure(e, held{e: *e, why: f.Why}) {
				count(e, f.Why)
			}
		case e.Kind == rdma.EvAsync, e.Kind == rdma.EvQPError:
			count(e, f.Why) // a QP's, CQ's or SRQ's asynchronous error, an error completion
		}
	}
	for _, h := range quiet.End() {
		count(&h.e, h.why)
	}
	for _, d := range sortedKeys(fatal) {
		fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: a fatal event in the last %v: %s", d, w.Length, fatal[d])})
	}
	for _, p := range sortedKeys(flaps) {
		fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: the port went down (PORT_ERR) in the last %v", p, w.Length)})
	}
	for _, d := range sortedKeys(qpErrs) {
		if qpErrs[d] >= o.QPErrors {
			fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: %d QP errors in the last %v (last: %s)", d, qpErrs[d], w.Length, lastQP[d])})
		}
	}
	for _, d := range sortedKeys(fails) {
		if fails[d] >= o.FailedCreates {
			fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: %d failed creates in the last %v (last: %s)", d, fails[d], w.Length, lastFail[d])})
		}
	}
	return fs
}

func pollFindings(w *Window, o Options) []Finding {
	var fs []Finding
	for _, p := range sortedKeys(w.PortStates) {
		// A port in one state all along is the ports' check's to judge
		// (its state at the end); a change of state is a flap.
		if st := w.PortStates[p]; len(st) > 1 {
			fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: the port went through %s in the last %v", p, strings.Join(st, " → "), w.Length)})
		}
	}
	if w.QPsErr != nil {
		fs = append(fs, Finding{Check: "events", Status: Unknown, Detail: "the QPs could not be listed (RDMA netlink): " + w.QPsErr.Error()})
	}
	for _, d := range sortedKeys(w.QPsInErr) {
		if n := w.QPsInErr[d]; n >= o.QPErrors {
			fs = append(fs, Finding{Check: "events", Status: Problem, Detail: fmt.Sprintf("%s: %d QPs in ERR (RDMA netlink, at the end of %v)", d, n, w.Length)})
		}
	}
	return fs
}

// CheckGIDs: on each ACTIVE RoCE port, a RoCE v2 GID for every address of its
// netdev (rdma_cm picks the GID of the address it binds to: without it,
// that address cannot be used over RDMA).
func CheckGIDs(s *State) []Finding {
	if s.GIDsErr != nil {
		return []Finding{{Check: "gids", Status: Unknown, Detail: "the GID tables could not be read: " + s.GIDsErr.Error()}}
	}
	var fs []Finding
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.LinkLayer != "Ethernet" || p.Netdev == "" || p.State != "ACTIVE" {
			continue // a port down is said once, by the ports' check
		}
		addrs, ok := s.Addrs[p.Netdev]
		if !ok {
			fs = append(fs, Finding{Check: "gids", Status: Unknown, Detail: fmt.Sprintf("%s: the addresses of %s could not be read (another network namespace?)", portName(p), p.Netdev)})
			continue
		}
		v2 := map[netip.Addr]bool{}
		for _, g := range s.GIDs {
			if g.DevName == p.Dev && g.Port == p.Port && g.Type == rdma.GIDTypeRoCEv2 {
				v2[g.GID] = true
			}
		}
		var missing []string
		for _, a := range addrs {
			if !v2[gidOf(a)] {
				missing = append(missing, a.String())
			}
		}
		switch {
		case len(addrs) == 0:
			fs = append(fs, Finding{Check: "gids", Status: Problem, Detail: fmt.Sprintf("%s: %s has no IP address, so no RoCE v2 GID: rdma_cm cannot use the port", portName(p), p.Netdev)})
		case len(missing) != 0:
			fs = append(fs, Finding{Check: "gids", Status: Problem, Detail: fmt.Sprintf("%s: no RoCE v2 GID for %s of %s", portName(p), strings.Join(missing, ", "), p.Netdev)})
		default:
			fs = append(fs, Finding{Check: "gids", Status: OK, Detail: fmt.Sprintf("%s: a RoCE v2 GID for each of %d addresses of %s", portName(p), len(addrs), p.Netdev)})
		}
	}
	return fs
}

// gidOf is the GID an address gets: an IPv4 address mapped into IPv6.
func gidOf(a netip.Addr) netip.Addr {
	if a.Is4() {
		return netip.AddrFrom16(a.As16())
	}
	return a
}

// CheckCgroups: every rdma cgroup limit leaves o.Headroom of itself
// free.
func CheckCgroups(s *State, o Options) []Finding {
	if s.CgroupsErr != nil {
		return []Finding{{Check: "limits", Status: Unknown, Detail: "the rdma cgroup limits could not be read: " + s.CgroupsErr.Error()}}
	}
	if s.CgroupsSkip != "" {
		return []Finding{{Check: "limits", Status: Skipped, Detail: s.CgroupsSkip}}
	}
	var fs []Finding
	for _, l := range s.Cgroups {
		if l.Max < 0 || o.Dev != "" && l.Dev != o.Dev {
			continue
		}
		free := l.Max - l.Current
		if float64(free) < o.Headroom*float64(l.Max) || free <= 0 {
			fs = append(fs, Finding{Check: "limits", Status: Problem, Detail: fmt.Sprintf("rdma cgroup %s: %s %d of %d in use on %s", l.Path, l.Resource, l.Current, l.Max, l.Dev)})
		}
	}
	if len(fs) == 0 {
		d := "no rdma cgroup limit set"
		if n := countLimited(s.Cgroups, o.Dev); n > 0 {
			d = fmt.Sprintf("%d rdma cgroup limit%s, each with %.0f%% free or more", n, plural(n), o.Headroom*100)
		}
		fs = append(fs, Finding{Check: "limits", Status: OK, Detail: d})
	}
	return fs
}

func countLimited(ls []CgroupLimit, dev string) int {
	n := 0
	for _, l := range ls {
		if l.Max >= 0 && (dev == "" || l.Dev == dev) {
			n++
		}
	}
	return n
}

func devOf(e *rdma.Event) string {
	if e.DevName == "" {
		return "-"
	}
	return e.DevName
}

func devPort(e *rdma.Event) string {
	if e.Port == 0 {
		return devOf(e)
	}
	return fmt.Sprintf("%s/%d", devOf(e), e.Port)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
