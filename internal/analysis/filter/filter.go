// Package filter selects resources with iproute2's filter grammar:
// "KEY VALUE [KEY VALUE]...", where numbers accept comma lists and ranges
// ("1-10,20") and names accept comma lists, case-insensitively
// ("state RTS,RTR"). The keys are iproute2's for each object type.
package filter

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Filter is a parsed filter expression; the zero value matches everything.
type Filter struct {
	terms []term
	procs *processes // SelectProcesses; nil: pid is the kernel's pid alone
}

// Processes names the process (thread group) of a thread, 0 when it
// cannot tell (enrich.Enricher does, from /proc).
type Processes interface{ TGID(tid uint32) uint32 }

// processes is SelectProcesses' lookup, kept per thread: a dump names
// the same threads over and over.
type processes struct {
	p     Processes
	mu    sync.Mutex
	known map[uint32]uint32
}

// maxThreads bounds what processes keeps; past it, it starts again.
const maxThreads = 1 << 16

func (ps *processes) tgid(tid uint32) uint32 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if g, ok := ps.known[tid]; ok {
		return g
	}
	if ps.known == nil || len(ps.known) >= maxThreads {
		ps.known = map[uint32]uint32{}
	}
	g := ps.p.TGID(tid)
	ps.known[tid] = g
	return g
}

// SelectProcesses makes pid select processes, as procps' and lsof's -p
// do: RDMA netlink names the thread that created an object (iproute2's
// pid), so with p, pid N selects the objects of every thread of process N
// as well as those of thread N. The objects keep their thread's pid. Only
// for live objects: a saved listing's threads are not this machine's.
func (f *Filter) SelectProcesses(p Processes) {
	if f != nil && p != nil {
		f.procs = &processes{p: p}
	}
}

type term struct {
	key   *key
	nums  []numRange
	strs  []string
	links []link
}

type numRange struct{ lo, hi uint64 }

type link struct {
	dev     string
	port    uint32
	anyPort bool
	noPort  bool // "dev/-"
}

// key describes one filter name: how to read it from a resource and what
// values it takes.
type key struct {
	name string
	// num reads a numeric attribute; ok is false when the kernel left it out.
	num func(r *rdma.Resource) (v uint64, ok bool)
	// str reads a name; ok is false when absent.
	str func(r *rdma.Resource) (v string, ok bool)
	// valid checks one name and, when it fails, says which are valid.
	valid  func(s string) error
	isLink bool
	addr   bool // compare as IP addresses, not text
	// within, when set, says whether a value is selected by a wanted one
	// (a prefix, a subtree) instead of equality.
	within func(v, want string) bool
}

func has(r *rdma.Resource, f rdma.Field) bool { return r.Has&f != 0 }

// numKey and strKey make a filter key of rdma's table of iproute2 keys:
// its name, presence bit and value.
func numKey(k *rdma.ResKey) *key {
	return &key{name: k.Name, num: func(r *rdma.Resource) (uint64, bool) { return k.Num(r), k.Present(r) }}
}

func strKey(k *rdma.ResKey) *key {
	return &key{name: k.Name, str: func(r *rdma.Resource) (string, bool) { return k.Str(r), k.Present(r) }}
}

func enumKey(k *rdma.ResKey, valid func(string) error) *key {
	fk := strKey(k)
	fk.valid = valid
	return fk
}

func validator[T any](parse func(string) (T, error)) func(string) error {
	return func(s string) error { _, err := parse(s); return err }
}

var (
	keyDev  = &key{name: "dev", str: func(r *rdma.Resource) (string, bool) { return r.DevName, true }}
	keyLink = &key{name: "link", isLink: true}
	keyPID  = numKey(&rdma.KeyPID)
	keyComm = &key{name: rdma.KeyComm.Name, str: func(r *rdma.Resource) (string, bool) {
		c := rdma.KeyComm.Str(r)
		return c, c != ""
	}}
	keyLQPN  = numKey(&rdma.KeyLQPN)
	keyPDN   = numKey(&rdma.KeyPDN)
	keyCQN   = numKey(&rdma.KeyCQN)
	keyCTXN  = numKey(&rdma.KeyCTXN)
	keyUsers = numKey(&rdma.KeyUsers)
)

// addrKey is src-addr or dst-addr, compared as addresses; portKey their port.
func addrKey(k *rdma.ResKey, get func(r *rdma.Resource) netip.AddrPort) *key {
	return &key{name: k.Name, addr: true, valid: validAddr,
		str: func(r *rdma.Resource) (string, bool) { return get(r).Addr().String(), k.Present(r) }}
}

func portKey(name string, k *rdma.ResKey, get func(r *rdma.Resource) netip.AddrPort) *key {
	return &key{name: name, num: func(r *rdma.Resource) (uint64, bool) { return uint64(get(r).Port()), k.Present(r) }}
}

// Keys for each resource type: iproute2 6.1's lists, plus dev/link and comm
// everywhere.
var keysByType = map[rdma.ResType][]*key{
	rdma.ResQP: {keyLink, keyDev, keyLQPN, numKey(&rdma.KeyRQPN), keyPID, keyComm,
		numKey(&rdma.KeySQPSN), numKey(&rdma.KeyRQPSN),
		enumKey(&rdma.KeyType, validator(rdma.ParseQPType)),
		enumKey(&rdma.KeyPathMig, validator(rdma.ParsePathMigState)),
		enumKey(&rdma.KeyState, validator(rdma.ParseQPState)),
		keyPDN},
	rdma.ResCMID: {keyLink, keyDev, keyLQPN,
		enumKey(&rdma.KeyQPType, validator(rdma.ParseQPType)),
		enumKey(&rdma.KeyState, validator(rdma.ParseCMState)),
		enumKey(&rdma.KeyPS, validator(rdma.ParsePortSpace)),
		{name: rdma.KeyDevType.Name, str: func(r *rdma.Resource) (string, bool) { return r.DevType, r.DevType != "" }},
		keyPID, keyComm,
		addrKey(&rdma.KeySrcAddr, func(r *rdma.Resource) netip.AddrPort { return r.Src }),
		portKey("src-port", &rdma.KeySrcAddr, func(r *rdma.Resource) netip.AddrPort { return r.Src }),
		addrKey(&rdma.KeyDstAddr, func(r *rdma.Resource) netip.AddrPort { return r.Dst }),
		portKey("dst-port", &rdma.KeyDstAddr, func(r *rdma.Resource) netip.AddrPort { return r.Dst }),
		numKey(&rdma.KeyCMIDN)},
	rdma.ResCQ: {keyDev, keyUsers, enumKey(&rdma.KeyPollCtx, validator(rdma.ParsePollCtx)), keyPID, keyComm, keyCQN, keyCTXN},
	rdma.ResMR: {keyDev, numKey(&rdma.KeyRKey), numKey(&rdma.KeyLKey), numKey(&rdma.KeyMRLen), keyPID, keyComm,
		numKey(&rdma.KeyMRN), keyPDN},
	rdma.ResPD:  {keyDev, keyUsers, keyPID, keyComm, keyCTXN, keyPDN},
	rdma.ResCTX: {keyDev, keyPID, keyComm, keyCTXN},
	rdma.ResSRQ: {keyDev, keyPID, keyComm, numKey(&rdma.KeySRQN),
		enumKey(&rdma.KeyType, validator(rdma.ParseSRQType)),
		keyPDN, keyCQN, keyLQPN},
}

func init() {
	// Where the owner runs: every type has an owner.
	for t := range keysByType {
		for _, name := range PlaceKeys {
			keysByType[t] = append(keysByType[t], placeKey(name))
		}
	}
}

func validAddr(s string) error {
	if _, err := parseAddr(s); err != nil {
		return fmt.Errorf("bad address %q: expected an IPv4 or IPv6 address", s)
	}
	return nil
}

// Keys lists the filter names valid for t, sorted.
func Keys(t rdma.ResType) []string {
	var out []string
	for _, k := range keysByType[t] {
		out = append(out, k.name)
	}
	sort.Strings(out)
	return out
}

// Parse parses a filter expression for resources of type t.
func Parse(t rdma.ResType, expr string) (*Filter, error) {
	return ParseArgs(t, strings.Fields(expr))
}

// ParseArgs parses filter words already split, e.g. command-line arguments.
func ParseArgs(t rdma.ResType, words []string) (*Filter, error) {
	keys, ok := keysByType[t]
	if !ok {
		return nil, fmt.Errorf("resources of type %s cannot be filtered", t)
	}
	f := &Filter{}
	for i := 0; i < len(words); i += 2 {
		name := strings.ToLower(words[i])
		var k *key
		for _, c := range keys {
			if c.name == name {
				k = c
			}
		}
		if k == nil {
			return nil, fmt.Errorf("unknown %s filter %q: valid filters are %s", t, words[i], strings.Join(Keys(t), ", "))
		}
		if i+1 >= len(words) {
			return nil, fmt.Errorf("filter %q has no value", name)
		}
		tm, err := parseTerm(k, words[i+1])
		if err != nil {
			return nil, fmt.Errorf("filter %s: %w", name, err)
		}
		f.terms = append(f.terms, tm)
	}
	if t == rdma.ResSRQ {
		// An SRQ carries a list of QPs, not one lqpn: match any of them.
		for i := range f.terms {
			if f.terms[i].key == keyLQPN {
				f.terms[i].key = srqLQPNKey
			}
		}
	}
	return f, nil
}

var srqLQPNKey = &key{name: rdma.KeyLQPN.Name}

func parseTerm(k *key, value string) (term, error) {
	tm := term{key: k}
	for _, part := range strings.Split(value, ",") {
		if part == "" {
			return tm, fmt.Errorf("empty value in %q", value)
		}
		switch {
		case k.isLink:
			l, err := parseLink(part)
			if err != nil {
				return tm, err
			}
			tm.links = append(tm.links, l)
		case k.num != nil || k == keyLQPN:
			lo, hi, found := strings.Cut(part, "-")
			a, err := parseNum(lo)
			if err != nil {
				return tm, fmt.Errorf("bad number %q: expected a number, a range like 1-10, or a comma list", part)
			}
			b := a
			if found {
				if b, err = parseNum(hi); err != nil || b < a {
					return tm, fmt.Errorf("bad range %q: expected LOW-HIGH with LOW <= HIGH", part)
				}
			}
			tm.nums = append(tm.nums, numRange{a, b})
		default:
			if k.valid != nil {
				if err := k.valid(part); err != nil {
					return tm, err
				}
			}
			tm.strs = append(tm.strs, part)
		}
	}
	return tm, nil
}

func parseLink(s string) (link, error) {
	dev, port, found := strings.Cut(s, "/")
	if dev == "" {
		return link{}, fmt.Errorf("bad link %q: expected DEV or DEV/PORT", s)
	}
	if !found {
		return link{dev: dev, anyPort: true}, nil
	}
	if port == "-" {
		return link{dev: dev, noPort: true}, nil
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return link{}, fmt.Errorf("bad link %q: expected DEV/PORT with a port number or -", s)
	}
	return link{dev: dev, port: uint32(p)}, nil
}

// parseNum reads a decimal number as iproute2 does ("010" is ten), or a
// hexadecimal one with 0x, the way rkey and lkey are printed.
func parseNum(s string) (uint64, error) {
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		return strconv.ParseUint(h, 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

// Match reports whether r passes every term. As in iproute2, a numeric
// filter on an attribute the kernel did not send does not match.
func (f *Filter) Match(r *rdma.Resource) bool {
	if f == nil {
		return true
	}
	for i := range f.terms {
		if !f.terms[i].match(r) && !f.ofProcess(&f.terms[i], r) {
			return false
		}
	}
	return true
}

// ofProcess says whether a pid term selects r by its thread's process.
func (f *Filter) ofProcess(t *term, r *rdma.Resource) bool {
	if f.procs == nil || t.key != keyPID || !has(r, rdma.HasPID) {
		return false
	}
	g := f.procs.tgid(r.Owner.PID)
	return g != 0 && g != r.Owner.PID && inRanges(t.nums, uint64(g))
}

func (t *term) match(r *rdma.Resource) bool {
	switch {
	case t.key.isLink:
		for _, l := range t.links {
			if l.dev != r.DevName {
				continue
			}
			switch {
			case l.anyPort:
				return true
			case l.noPort:
				if !has(r, rdma.HasPort) {
					return true
				}
			case has(r, rdma.HasPort) && r.Port == l.port:
				return true
			}
		}
		return false
	case t.key == srqLQPNKey:
		for _, q := range r.QPs {
			for _, n := range t.nums {
				if uint64(q.Min) <= n.hi && uint64(q.Max) >= n.lo {
					return true
				}
			}
		}
		return false
	case t.key.num != nil:
		v, ok := t.key.num(r)
		if !ok {
			return false
		}
		for _, n := range t.nums {
			if v >= n.lo && v <= n.hi {
				return true
			}
		}
		return false
	default:
		v, ok := t.key.str(r)
		if !ok {
			return false
		}
		for _, s := range t.strs {
			if t.key.addr {
				if a, err := parseAddr(s); err == nil && a == v {
					return true
				}
				continue
			}
			if t.key.within != nil {
				if t.key.within(v, s) {
					return true
				}
				continue
			}
			if strings.EqualFold(s, v) {
				return true
			}
		}
		return false
	}
}

// ParseSaved builds the filter of a saved dump's records from iproute2
// filter words. rdma_cm IDs use the cm_id filters; QPs (from saved `rdma
// res show qp`) use the qp filters when the expression is valid for QPs
// too, and are dropped when it is not (a "ps TCP" filter selects no QP).
func ParseSaved(words []string) (func(*rdma.Resource) bool, error) {
	if len(words) == 0 {
		return func(*rdma.Resource) bool { return true }, nil
	}
	cm, err := ParseArgs(rdma.ResCMID, words)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	qp, qerr := ParseArgs(rdma.ResQP, words)
	return func(r *rdma.Resource) bool {
		if r.Type == rdma.ResQP {
			return qerr == nil && qp.Match(r)
		}
		return cm.Match(r)
	}, nil
}
