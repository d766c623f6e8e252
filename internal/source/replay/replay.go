// Package replay reads a saved `rdmatrace trace -j` recording (NDJSON) back
// into events, so that a post-mortem can rebuild the resource table of that
// boot. It streams: memory does not grow with the recording, every line
// gives an event or an error naming the source and line, and reading goes
// on after a bad line.
package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Reader reads events from a recording.
type Reader struct {
	lr    *lines.Reader
	limit lineerr.Limit
	err   error // a read error, returned after the count of hidden bad lines
	// Device indexes are not in the recording: a device gets a new one
	// each time it appears after it was unregistered, as in the kernel.
	devs    map[string]uint32
	nextDev uint32
	// names and places are what events repeat (names, owners' places),
	// kept once: what holds events (a post-mortem's table) holds one
	// copy of them, not one an event.
	names  map[string]string
	places map[rdma.Placement]*rdma.Placement
}

// maxInterned bounds names and places: a recording of a distinct
// name an event shares nothing past it, and memory stays bounded.
const maxInterned = 4096

// intern is s, the copy kept of it when there is one.
func (r *Reader) intern(s string) string {
	if s == "" {
		return ""
	}
	if k, ok := r.names[s]; ok {
		return k
	}
	if r.names == nil {
		r.names = map[string]string{}
	}
	if len(r.names) < maxInterned {
		r.names[s] = s
	}
	return s
}

// place is p, shared with the events of the same place.
func (r *Reader) place(p rdma.Placement) *rdma.Placement {
	if k, ok := r.places[p]; ok {
		return k
	}
	if r.places == nil {
		r.places = map[rdma.Placement]*rdma.Placement{}
	}
	p.Cgroup, p.Runtime, p.ContainerID, p.PodUID = r.intern(p.Cgroup), r.intern(p.Runtime), r.intern(p.ContainerID), r.intern(p.PodUID)
	p.PodNamespace, p.PodName = r.intern(p.PodNamespace), r.intern(p.PodName)
	if len(r.places) < maxInterned {
		r.places[p] = &p
	}
	return &p
}

// NewReader reads the recording r, called source in errors.
func NewReader(r io.Reader, source string) *Reader {
	return &Reader{lr: lines.NewReader(r, source), devs: map[string]uint32{}, limit: lineerr.Limit{What: "an event of rdmatrace trace -j"}}
}

// object is one line of `trace -j`: a field for each key of
// rdma.EventKeys, of its value's type (TestObjectHoldsEveryKeyOfTheTable).
type object struct {
	Time      string  `json:"time"`
	Event     string  `json:"event"`
	Res       string  `json:"res"`
	Ifname    *string `json:"ifname"`
	Port      *uint32 `json:"port"`
	ID        *uint32 `json:"id"`
	LQPN      *uint32 `json:"lqpn"`
	Type      string  `json:"type"`
	State     string  `json:"state"`
	PrevState string  `json:"prev-state"`
	CMEvent   string  `json:"cm-event"`
	Status    int32   `json:"status"`
	PS        string  `json:"ps"`
	Src       string  `json:"src-addr"`
	Dst       string  `json:"dst-addr"`
	PID       *uint32 `json:"pid"`
	TGID      *uint32 `json:"tgid"`
	Comm      string  `json:"comm"`
	KernName  string  `json:"kern-name"`
	CgroupID  uint64  `json:"cgroup-id"`
	// Where the owner ran (formats' place keys).
	Cgroup      string `json:"cgroup"`
	Runtime     string `json:"runtime"`
	ContainerID string `json:"container-id"`
	Job         string `json:"job"` // derived: container-id has it
	PodUID      string `json:"pod-uid"`
	PodNS       string `json:"pod-namespace"`
	PodName     string `json:"pod-name"`
	PidnsPID    uint32 `json:"pidns-pid"`
	NetNS       uint64 `json:"netns"`
	ActorPID    uint32 `json:"actor-pid"`
	ActorComm   string `json:"actor-comm"`
	Cleanup     string `json:"cleanup"`
	// Spans and off-CPU spells; an MR's size.
	Func      string       `json:"func"`
	DurUS     *json.Number `json:"dur-us"`
	Size      *uint64      `json:"size"`
	WaitUS    *json.Number `json:"wait-us"`
	Preempted bool         `json:"preempted"`
	NextPID   *uint32      `json:"next-pid"`
	NextComm  string       `json:"next-comm"`
	// Port conflicts and SMC fallbacks.
	Holders    []string `json:"holders"`
	Suppressed uint32   `json:"suppressed"`
	Fallback   *uint32  `json:"fallback"`
	Inode      uint64   `json:"inode"`
	// SMC-R link events.
	LGRID     string `json:"lgr-id"`
	Role      string `json:"role"`
	LinkID    uint8  `json:"link-id"`
	LinkState string `json:"link-state"`
	// Device events; trace without BPF.
	Netdev *string `json:"netdev"`
	Polled bool    `json:"polled"`
	// A QP's transport settings (qp-attr).
	Timeout     *uint8  `json:"timeout"`
	RetryCnt    *uint8  `json:"retry-cnt"`
	RNRRetry    *uint8  `json:"rnr-retry"`
	MinRNRTimer *uint8  `json:"min-rnr-timer"`
	PathMTU     *uint32 `json:"path-mtu"`
	SGIDIndex   *uint32 `json:"sgid-index"`
	SGID        string  `json:"sgid"`
	GIDType     string  `json:"gid-type"`
	GIDNdev     *string `json:"gid-ndev"`
	GIDNdevMTU  uint32  `json:"gid-ndev-mtu"`
	GIDVLAN     *uint32 `json:"gid-vlan"`
	GIDNetNS    uint64  `json:"gid-netns"`
	DGID        string  `json:"dgid"`
	// Async events and QP errors.
	IBEvent  string   `json:"ib-event"`
	QPError  string   `json:"qp-error"`
	WCStatus string   `json:"wc-status"`
	Count    uint64   `json:"count"`
	RGID     string   `json:"rgid"`
	RQPN     uint32   `json:"rqpn"`
	OnPort   []string `json:"on-port"`
	// A call that created nothing (call-fail).
	AskedQPType   string  `json:"asked-qp-type"`
	AskedSendWR   *uint32 `json:"asked-send-wr"`
	AskedRecvWR   uint32  `json:"asked-recv-wr"`
	AskedSendSGE  uint32  `json:"asked-send-sge"`
	AskedRecvSGE  uint32  `json:"asked-recv-sge"`
	AskedInline   uint32  `json:"asked-inline"`
	AskedCQE      *uint32 `json:"asked-cqe"`
	AskedLength   *uint64 `json:"asked-length"`
	AskedAccess   uint32  `json:"asked-access"`
	MaxQPWR       *uint32 `json:"max-qp-wr"`
	MaxSendSGE    uint32  `json:"max-send-sge"`
	MaxRecvSGE    uint32  `json:"max-recv-sge"`
	MaxCQE        uint32  `json:"max-cqe"`
	MaxMRSize     uint64  `json:"max-mr-size"`
	MaxQP         uint32  `json:"max-qp"`
	MaxCQ         uint32  `json:"max-cq"`
	MaxMR         uint32  `json:"max-mr"`
	MaxPD         uint32  `json:"max-pd"`
	MaxSRQ        uint32  `json:"max-srq"`
	Limit         string  `json:"limit"`
	RDMACgRes     string  `json:"rdmacg-res"`
	RDMACgPath    *string `json:"rdmacg-path"`
	RDMACgMax     string  `json:"rdmacg-max"`
	RDMACgCurrent uint64  `json:"rdmacg-current"`
	Memlock       uint64  `json:"memlock"`
	PinnedPages   uint64  `json:"pinned-pages"`
	NeededPages   uint64  `json:"needed-pages"`
	// A GID table change (gid-change).
	GIDOp    string  `json:"gid-op"`
	GID      string  `json:"gid"`
	GIDIndex *uint32 `json:"gid-index"`
	// Names trace -j derives from a number (status, fallback) or from
	// the settings (risks): read, not needed; rendering derives them again.
	StatusName     string   `json:"status-name"`
	FallbackReason string   `json:"fallback-reason"`
	Risks          []string `json:"risks"`
	Why            string   `json:"why"` // rdma.Event.Failure's words
	// Where a user object was created (--stacks).
	Via   string           `json:"via"`
	Stack []rdma.CallFrame `json:"stack"`
}

// Next returns the next event, io.EOF at the end, or a *lineerr.Error for a line
// that is not one (call Next again to go on). Of an input's bad lines, the
// first lineerr.Shown are returned each and the rest counted in one error
// at the end; after lineerr.GiveUp in a row the input is read no further.
func (r *Reader) Next(ev *rdma.Event) error {
	for {
		if r.err != nil || r.limit.GaveUp() {
			if e := r.limit.End(); e != nil {
				return e
			}
			if r.err != nil {
				return r.err
			}
			return io.EOF
		}
		line, err := r.lr.Next()
		if err != nil {
			var le *lineerr.Error
			if errors.As(err, &le) {
				if e := r.limit.Bad(le); e != nil {
					return e
				}
				continue
			}
			r.err = err
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			r.lr.SkipBlank() // a run of them costs a byte scan
			continue
		}
		if e := r.decode(line, ev); e != nil {
			if e = r.limit.Bad(e); e != nil {
				return e
			}
			continue
		}
		r.limit.Good()
		return nil
	}
}

// decode reads one line into ev.
func (r *Reader) decode(line []byte, ev *rdma.Event) *lineerr.Error {
	if !utf8.Valid(line) {
		i := invalidUTF8(line)
		return r.errorAt("an event of rdmatrace trace -j in UTF-8 (as trace -j writes)",
			lineerr.Quote(line[max(0, i-8):])+" (byte "+strconv.Itoa(i+1)+" of the line is not)")
	}
	if fe := checkKeys(line); fe != nil {
		return r.errorAt(fe.expected, fe.found)
	}
	var o object
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return r.errorAt(te.Field+": "+keyWords[te.Field], valueWords(te.Value))
		}
		return r.errorAt("an event of rdmatrace trace -j", lineerr.Quote(line)+" ("+err.Error()+")")
	}
	if fe := r.event(&o, ev); fe != nil {
		return r.errorAt(fe.expected, fe.found)
	}
	return nil
}

func (r *Reader) errorAt(expected, found string) *lineerr.Error {
	return &lineerr.Error{Source: r.lr.Source(), Line: r.lr.Line(), Expected: expected, Found: found}
}

// The times an event can hold: time.Time.UnixNano's range.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// fieldError is a key of an event with a value that is not one.
type fieldError struct{ expected, found string }

// badField says what a key wanted: err is the rdma parser's own message.
func badField(key, value string, err error) *fieldError {
	return &fieldError{expected: "a valid " + key, found: lineerr.Quote([]byte(value)) + " (" + err.Error() + ")"}
}

func (r *Reader) event(o *object, ev *rdma.Event) *fieldError {
	*ev = rdma.Event{}
	t, err := time.Parse(time.RFC3339Nano, o.Time)
	if err != nil {
		return &fieldError{"time in RFC 3339", lineerr.Quote([]byte(o.Time))}
	}
	if t.Before(minTime) || t.After(maxTime) {
		// Events carry nanoseconds since 1970 in an int64: a time outside
		// would come back as another one.
		return &fieldError{"time between " + minTime.Format(time.RFC3339) + " and " + maxTime.Format(time.RFC3339) +
			" (nanoseconds since 1970 in 64 bits)", lineerr.Quote([]byte(o.Time))}
	}
	ev.Time, ev.Mono = t.UTC(), uint64(t.UnixNano())
	kinds, err := rdma.ParseEventKind(o.Event)
	if err != nil || len(kinds) != 1 {
		return &fieldError{"event: one of rdmatrace's event names", lineerr.Quote([]byte(o.Event))}
	}
	ev.Kind = kinds[0]
	if o.Res != "" {
		if ev.Type, err = rdma.ParseResType(o.Res); err != nil {
			return badField("res", o.Res, err)
		}
		ev.Flags |= rdma.EvHasRes
	}
	if o.Ifname != nil {
		ev.DevName = r.intern(*o.Ifname)
		ev.DevIndex = r.devIndex(ev.DevName, ev.Kind)
		ev.Flags |= rdma.EvHasDev
	}
	if o.Port != nil {
		ev.Port, ev.Resource.Has = *o.Port, ev.Resource.Has|rdma.HasPort
	}
	if o.ID != nil {
		ev.ID = *o.ID
	}
	if o.LQPN != nil {
		ev.LQPN, ev.Resource.Has = *o.LQPN, ev.Resource.Has|rdma.HasLQPN|rdma.HasQPType
		if ev.QPType, err = rdma.ParseQPType(o.Type); err != nil {
			return badField(rdma.KeyType.Name, o.Type, err)
		}
	}
	if o.State != "" {
		st, err := parseState(ev.Type, o.State)
		if err != nil {
			return badField(rdma.KeyState.Name, o.State, err)
		}
		ev.SetState(st)
	}
	if o.PrevState != "" {
		if ev.PrevState, err = parseState(ev.Type, o.PrevState); err != nil {
			return badField("prev-state", o.PrevState, err)
		}
		ev.Flags |= rdma.EvHasPrevState
	}
	if o.CMEvent != "" {
		if ev.CMEvent, err = rdma.ParseCMEvent(o.CMEvent); err != nil {
			return badField("cm-event", o.CMEvent, err)
		}
		ev.Flags |= rdma.EvHasCM
	}
	ev.Status = o.Status
	if o.Src != "" {
		if ev.PS, err = rdma.ParsePortSpace(o.PS); err != nil {
			return badField(rdma.KeyPS.Name, o.PS, err)
		}
		if ev.Src, err = parseAddr(o.Src); err != nil {
			return &fieldError{rdma.KeySrcAddr.Name + ": IP:PORT", lineerr.Quote([]byte(o.Src))}
		}
		if o.Dst != "" {
			if ev.Dst, err = parseAddr(o.Dst); err != nil {
				return &fieldError{rdma.KeyDstAddr.Name + ": IP:PORT", lineerr.Quote([]byte(o.Dst))}
			}
			ev.Resource.Has |= rdma.HasDstAddr
		}
		ev.Resource.Has |= rdma.HasSrcAddr | rdma.HasPS
	}
	if o.PID != nil {
		ev.Owner = rdma.Owner{PID: *o.PID, TID: *o.PID, Comm: r.intern(o.Comm)}
		if o.TGID != nil {
			ev.Owner.PID = *o.TGID
		}
		ev.Flags |= rdma.EvHasOwner | rdma.EvUser
		ev.OwnerCgroup = o.CgroupID
	}
	// A kernel owner: comm without a pid (iproute2's spelling); recordings
	// made before said kern-name.
	ev.Owner.KernName = r.intern(o.KernName)
	if o.PID == nil && o.Comm != "" {
		ev.Owner.KernName = r.intern(o.Comm)
	}
	ev.Actor = rdma.Owner{PID: o.ActorPID, TID: o.ActorPID, Comm: r.intern(o.ActorComm)}
	if o.ActorPID == 0 && o.PID != nil {
		ev.Actor = ev.Owner // the key is left out when the owner acted
	}
	if p := (rdma.Placement{Cgroup: o.Cgroup, Runtime: o.Runtime, ContainerID: o.ContainerID, PodUID: o.PodUID,
		PodNamespace: o.PodNS, PodName: o.PodName, NSPid: o.PidnsPID, NetNS: o.NetNS}); o.PID != nil && p != (rdma.Placement{}) {
		ev.Owner.Place = r.place(p)
	}
	switch o.Cleanup {
	case "":
	case "exit":
		ev.Flags |= rdma.EvActorExiting
	case "close":
		ev.Flags |= rdma.EvFileClose
	default:
		return &fieldError{"cleanup: exit or close", lineerr.Quote([]byte(o.Cleanup))}
	}
	if o.Netdev != nil {
		ev.Netdev, ev.Resource.Has = *o.Netdev, ev.Resource.Has|rdma.HasNetdev
	}
	if o.Polled {
		ev.Flags |= rdma.EvPolled
	}
	return spanFields(o, ev)
}

// spanFields reads what spans and off-CPU spells carry.
func spanFields(o *object, ev *rdma.Event) *fieldError {
	switch {
	case ev.Kind == rdma.EvSpan:
		if o.Func == "" {
			return &fieldError{"func: the kernel function's name of a span", "none"}
		}
		ev.Span.Func = o.Func
	case ev.Kind == rdma.EvPortBusy:
		ev.PortBusy.Op = o.Func
	case ev.Kind == rdma.EvCallFail:
		if o.Func == "" {
			return &fieldError{"func: the call of a call-fail", "none"}
		}
		ev.CallFail.Op = o.Func
	case o.Func != "":
		return &fieldError{"no func on a " + ev.Kind.String() + " (spans and port-busy have one)", lineerr.Quote([]byte(o.Func))}
	}
	if o.DurUS != nil {
		ns, err := micros(*o.DurUS)
		if err != nil {
			return &fieldError{"dur-us: microseconds with up to three decimals", fmt.Sprint(*o.DurUS)}
		}
		switch ev.Kind {
		case rdma.EvSpan:
			ev.Span.Dur = ns
		case rdma.EvOffCPU:
			ev.OffCPU.Dur = ns
		default:
			return &fieldError{"no dur-us on a " + ev.Kind.String() + " (spans and off-cpu spells have one)", fmt.Sprint(*o.DurUS)}
		}
		ev.Flags |= rdma.EvHasDur
	}
	if o.Size != nil {
		ev.Size, ev.Flags = *o.Size, ev.Flags|rdma.EvHasSize
	}
	if o.WaitUS != nil {
		ns, err := micros(*o.WaitUS)
		if err != nil {
			return &fieldError{"wait-us: microseconds with up to three decimals", fmt.Sprint(*o.WaitUS)}
		}
		ev.OffCPU.Wait = ns
	}
	if o.Preempted {
		ev.Flags |= rdma.EvPreempted
	}
	if o.NextPID != nil {
		ev.OffCPU.Next = rdma.Owner{PID: *o.NextPID, TID: *o.NextPID, Comm: o.NextComm}
	}
	if ev.Kind == rdma.EvSpan && o.PID != nil {
		ev.Flags &^= rdma.EvUser // the caller of a function, not a user object's owner
	}
	ev.PortBusy.Holders, ev.PortBusy.Suppressed, ev.Inode = o.Holders, o.Suppressed, o.Inode
	if o.Stack != nil {
		ev.Stack = &rdma.CallStack{Via: o.Via, Frames: o.Stack}
	}
	if ev.Kind.IsSMCLink() {
		if fe := smcLinkFields(o, ev); fe != nil {
			return fe
		}
	}
	if ev.Kind == rdma.EvQPAttr {
		if fe := qpAttrFields(o, &ev.QPAttr); fe != nil {
			return fe
		}
	}
	if ev.Kind == rdma.EvAsync || ev.Kind == rdma.EvQPError {
		if fe := failureFields(o, ev); fe != nil {
			return fe
		}
	}
	if ev.Kind == rdma.EvCallFail {
		if fe := callFailFields(o, ev); fe != nil {
			return fe
		}
	}
	if ev.Kind == rdma.EvGIDChange {
		if fe := gidFields(o, ev); fe != nil {
			return fe
		}
	}
	if ev.Kind == rdma.EvSMCFallback {
		if o.Fallback == nil {
			return &fieldError{"fallback: the SMC fallback reason of an smc-fallback", "none"}
		}
		ev.Status = int32(*o.Fallback)
	}
	return nil
}

// micros reads microseconds with up to three decimals as nanoseconds,
// exactly (no float rounding).
func micros(n json.Number) (uint64, error) {
	s := string(n)
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || len(frac) > 3 {
		return 0, fmt.Errorf("%q: expected microseconds with up to three decimals", s)
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("%q: expected microseconds with up to three decimals", s)
		}
	}
	return w*1000 + f, nil
}

// devIndex numbers devices by name, anew after each unregistration.
func (r *Reader) devIndex(name string, kind rdma.EventKind) uint32 {
	idx, ok := r.devs[name]
	if !ok {
		r.nextDev++
		idx = r.nextDev
		r.devs[name] = idx
	}
	if kind == rdma.EvDevUnregistered {
		delete(r.devs, name)
	}
	return idx
}

func parseState(res rdma.ResType, s string) (uint8, error) {
	if res == rdma.ResCMID {
		v, err := rdma.ParseCMState(s)
		return uint8(v), err
	}
	v, err := rdma.ParseQPState(s)
	return uint8(v), err
}

// parseAddr reads iproute2's "ip:port", with IPv6 as given by the kernel
// ("fe80::1%2:4791" or "[fe80::1]:4791").
func parseAddr(s string) (netip.AddrPort, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("%q: expected IP:PORT", s)
	}
	port, err := strconv.ParseUint(s[i+1:], 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: expected IP:PORT", s)
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s[:i], "["), "]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: expected IP:PORT", s)
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// smcLinkFields reads an SMC-R link event's link: its group, role, id and
// state.
func smcLinkFields(o *object, ev *rdma.Event) *fieldError {
	ev.SMC.ID = o.LinkID
	if o.LGRID != "" {
		id, err := strconv.ParseUint(o.LGRID, 16, 32)
		if err != nil || len(o.LGRID) != 8 {
			return &fieldError{"lgr-id: a link group id of 8 hex digits", lineerr.Quote([]byte(o.LGRID))}
		}
		if o.Role != "client" && o.Role != "server" {
			return &fieldError{"role: client or server", lineerr.Quote([]byte(o.Role))}
		}
		ev.SMC.LGR, ev.SMC.Role, ev.SMC.HasLGR = uint32(id), o.Role, true
	}
	if o.LinkState != "" {
		if !slices.Contains(rdma.SMCLinkStates, o.LinkState) {
			return &fieldError{"link-state: " + strings.Join(rdma.SMCLinkStates, ", "), lineerr.Quote([]byte(o.LinkState))}
		}
		ev.SMC.State = o.LinkState
	}
	return nil
}

// qpAttrFields reads a qp-attr event's settings: a key present is a
// setting the modify set.
func qpAttrFields(o *object, a *rdma.QPAttr) *fieldError {
	set := func(v *uint8, m rdma.QPAttrMask, dst *uint8) {
		if v != nil {
			*dst, a.Mask = *v, a.Mask|m
		}
	}
	set(o.Timeout, rdma.QPMaskTimeout, &a.Timeout)
	set(o.RetryCnt, rdma.QPMaskRetryCnt, &a.RetryCnt)
	set(o.RNRRetry, rdma.QPMaskRNRRetry, &a.RNRRetry)
	set(o.MinRNRTimer, rdma.QPMaskMinRNRTimer, &a.MinRNRTimer)
	if o.PathMTU != nil {
		if a.PathMTU = rdma.PathMTUEnum(*o.PathMTU); a.PathMTU == 0 {
			return &fieldError{"path-mtu: 256, 512, 1024, 2048 or 4096", strconv.FormatUint(uint64(*o.PathMTU), 10)}
		}
		a.Mask |= rdma.QPMaskPathMTU
	}
	if o.SGIDIndex != nil {
		g, err := netip.ParseAddr(o.SGID)
		if err != nil || !g.Is6() || g.Zone() != "" {
			return &fieldError{"sgid: a GID in IPv6 notation", lineerr.Quote([]byte(o.SGID))}
		}
		t, err := rdma.ParseGIDType(o.GIDType)
		if err != nil {
			return badField("gid-type", o.GIDType, err)
		}
		if *o.SGIDIndex > math.MaxUint16 {
			return &fieldError{"sgid-index: a whole number from 0 to 65535", strconv.FormatUint(uint64(*o.SGIDIndex), 10)}
		}
		a.HasGID, a.SGID, a.SGIDIndex, a.GIDType = true, g, uint16(*o.SGIDIndex), t
	}
	if o.GIDNdev != nil {
		a.HasNdev, a.Ndev, a.NdevMTU, a.NetNS = true, *o.GIDNdev, o.GIDNdevMTU, o.GIDNetNS
		if o.GIDVLAN != nil {
			if *o.GIDVLAN > 4095 {
				return &fieldError{"gid-vlan: a VLAN id from 0 to 4095", strconv.FormatUint(uint64(*o.GIDVLAN), 10)}
			}
			a.HasVLAN, a.VLAN = true, uint16(*o.GIDVLAN)
		}
	}
	if o.DGID != "" {
		g, err := netip.ParseAddr(o.DGID)
		if err != nil || !g.Is6() || g.Zone() != "" {
			return &fieldError{"dgid: a GID in IPv6 notation", lineerr.Quote([]byte(o.DGID))}
		}
		a.HasGRH, a.DGID, a.Mask = true, g, a.Mask|rdma.QPMaskAV
	}
	return nil
}

// keyWords says, for each key of an event (rdma.EventKeys, the table
// trace -j writes by), what its value must be, in the words of the manual
// rather than Go's types; its keys are the only ones an event has.
var keyWords = func() map[string]string {
	words := map[string]string{}
	for _, k := range append(rdma.EventKeys[:len(rdma.EventKeys):len(rdma.EventKeys)], rdma.OldEventKeys...) {
		words[k.Name] = valueKindWords[k.Value]
	}
	return words
}()

var valueKindWords = [...]string{
	rdma.ValString:  "a string",
	rdma.ValBool:    "true or false",
	rdma.ValStrings: "an array of strings",
	rdma.ValMicros:  "a number",
	rdma.ValUint8:   "a whole number from 0 to 255",
	rdma.ValUint32:  "a whole number from 0 to 4294967295",
	rdma.ValUint64:  "a whole number from 0 to 18446744073709551615",
	rdma.ValInt32:   "a whole number from -2147483648 to 2147483647",
	rdma.ValFrames:  `an array of frames ({"func","file","line","binary","offset","build-id"})`,
}

// valueWords says what JSON value was found where another was expected:
// encoding/json names it "string", "number -1", "array"...
func valueWords(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	}
	return "a " + v
}

// checkKeys makes sure each key of the line's object is one of an event's,
// spelled exactly, and given once: encoding/json takes "TIME" for "time",
// and the last of two for both.
func checkKeys(line []byte) *fieldError {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: Decode says so
	}
	var seen [8]string
	keys := seen[:0]
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		if _, ok := keyWords[k]; !ok {
			return &fieldError{"an event of rdmatrace trace -j", "unknown key " + lineerr.Quote([]byte(k))}
		}
		if slices.Contains(keys, k) {
			return &fieldError{"an event of rdmatrace trace -j, each key once", lineerr.Quote([]byte(k)) + " twice"}
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return nil
}

// invalidUTF8 is the offset of the first byte of b that is not UTF-8.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// failureFields reads an async event's or a QP error's own keys.
func failureFields(o *object, ev *rdma.Event) *fieldError {
	f := &ev.Fault
	var err error
	if ev.Kind == rdma.EvAsync {
		if f.IBEvent, err = rdma.ParseIBEvent(o.IBEvent); err != nil {
			return badField("ib-event", o.IBEvent, err)
		}
	} else {
		if f.Report, err = rdma.ParseQPErrorReport(o.QPError); err != nil {
			return badField("qp-error", o.QPError, err)
		}
		if f.Report != rdma.QPErrDriver {
			if f.WCStatus, err = rdma.ParseWCStatus(o.WCStatus); err != nil {
				return badField("wc-status", o.WCStatus, err)
			}
			f.Count = o.Count
		}
	}
	if o.RGID != "" {
		a, err := netip.ParseAddr(o.RGID)
		if err != nil || !a.Is6() {
			return &fieldError{"rgid: a GID as an IPv6 address", lineerr.Quote([]byte(o.RGID))}
		}
		f.PeerGID, f.PeerQPN = a, o.RQPN
	}
	f.OnPort = o.OnPort
	return nil
}

// callFailFields reads a failed call's own keys: its errno (status), what
// it asked, the device's limits and the limit that refused it.
func callFailFields(o *object, ev *rdma.Event) *fieldError {
	c := &ev.CallFail
	if o.Status >= 0 || o.Status < -4095 {
		return &fieldError{"status: the negative errno of a call-fail", strconv.Itoa(int(o.Status))}
	}
	c.Errno, ev.Status = -o.Status, 0
	a := &c.Asked
	if o.AskedSendWR != nil {
		t, err := rdma.ParseQPType(o.AskedQPType)
		if err != nil {
			return badField("asked-qp-type", o.AskedQPType, err)
		}
		a.Has |= rdma.AskedQP
		a.QPType, a.MaxSendWR, a.MaxRecvWR = t, *o.AskedSendWR, o.AskedRecvWR
		a.MaxSendSGE, a.MaxRecvSGE, a.MaxInlineData = o.AskedSendSGE, o.AskedRecvSGE, o.AskedInline
	}
	if o.AskedCQE != nil {
		a.Has |= rdma.AskedCQE
		a.CQE = *o.AskedCQE
	}
	if o.AskedLength != nil {
		a.Has |= rdma.AskedMR
		a.Length, a.Access = *o.AskedLength, o.AskedAccess
	}
	if o.MaxQPWR != nil {
		c.Caps = rdma.DevCaps{Valid: true, MaxQPWR: *o.MaxQPWR, MaxSendSGE: o.MaxSendSGE, MaxRecvSGE: o.MaxRecvSGE,
			MaxCQE: o.MaxCQE, MaxMRSize: o.MaxMRSize, MaxQP: o.MaxQP, MaxCQ: o.MaxCQ, MaxMR: o.MaxMR, MaxPD: o.MaxPD, MaxSRQ: o.MaxSRQ}
	}
	if o.Limit == "" {
		return nil
	}
	k, err := rdma.ParseLimitKind(o.Limit)
	if err != nil {
		return badField("limit", o.Limit, err)
	}
	l := &c.Limit
	l.Kind = k
	switch k {
	case rdma.LimitRDMACgroup:
		if o.RDMACgRes != "hca_handle" && o.RDMACgRes != "hca_object" {
			return &fieldError{"rdmacg-res: hca_handle or hca_object", lineerr.Quote([]byte(o.RDMACgRes))}
		}
		l.CgroupRes = o.RDMACgRes
		if o.RDMACgPath != nil {
			max := int64(-1)
			if o.RDMACgMax != "max" {
				v, err := strconv.ParseInt(o.RDMACgMax, 10, 64)
				if err != nil || v < 0 {
					return &fieldError{"rdmacg-max: a count or max", lineerr.Quote([]byte(o.RDMACgMax))}
				}
				max = v
			}
			l.Cgroup = &rdma.RDMACgroupUse{Path: *o.RDMACgPath, Max: max, Current: int64(min(o.RDMACgCurrent, 1<<62))}
		}
	case rdma.LimitMemlock:
		l.Memlock, l.Pinned, l.NPages = o.Memlock, o.PinnedPages, o.NeededPages
	}
	return nil
}

// gidFields reads a GID table change.
func gidFields(o *object, ev *rdma.Event) *fieldError {
	g := &ev.GID
	switch o.GIDOp {
	case "add":
		g.Added = true
	case "del":
	default:
		return &fieldError{"gid-op: add or del", lineerr.Quote([]byte(o.GIDOp))}
	}
	a, err := netip.ParseAddr(o.GID)
	if err != nil || !a.Is6() {
		return &fieldError{"gid: a GID as an IPv6 address", lineerr.Quote([]byte(o.GID))}
	}
	if o.GIDIndex == nil {
		return &fieldError{"gid-index: the GID's index in its table", "none"}
	}
	t, err := rdma.ParseGIDType(o.GIDType)
	if err != nil {
		return badField("gid-type", o.GIDType, err)
	}
	g.GID, g.Index, g.Type = a, *o.GIDIndex, t
	if o.GIDNdev != nil {
		g.Netdev = *o.GIDNdev
	}
	return nil
}

// Drain reads the rest of the recording: each event to each (reused
// after it returns: copy what you keep), each line that is not one to bad
// (lines.Drain: told, counted, and reading goes on). It returns how many
// lines were bad, and what ended the recording early: an error of each,
// as it came, or an error reading it, named after it.
func (r *Reader) Drain(each func(*rdma.Event) error, bad func(*lineerr.Error)) (badLines int, err error) {
	var ev rdma.Event
	var eachErr error
	badLines, err = lines.Drain(func() error {
		if err := r.Next(&ev); err != nil {
			return err
		}
		eachErr = each(&ev)
		return eachErr
	}, bad)
	if err != nil && err != eachErr {
		err = lines.ReadError(r.lr.Source(), err)
	}
	return badLines, err
}
