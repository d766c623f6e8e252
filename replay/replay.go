// Package replay reads a saved `rdmatrace trace -j` recording (NDJSON) back
// into events, so that a post-mortem can rebuild the resource table of that
// boot. It streams: memory does not grow with the recording, every line
// gives an event or an error naming the source and line, and reading goes
// on after a bad line.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/rdma"
)

// MaxLine bounds a line; an event is a few hundred bytes.
const MaxLine = 64 << 10

// Error is a line that is not an event.
type Error struct {
	Source string
	Line   int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg) }

// Reader reads events from a recording.
type Reader struct {
	r      *bufio.Reader
	source string
	line   int
	// Device indexes are not in the recording: a device gets a new one
	// each time it appears after it was unregistered, as in the kernel.
	devs    map[string]uint32
	nextDev uint32
}

// NewReader reads the recording r, called source in errors.
func NewReader(r io.Reader, source string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), source: source, devs: map[string]uint32{}}
}

// object is one line of `trace -j`, with formats.EventObject's keys.
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
	ActorPID  uint32  `json:"actor-pid"`
	ActorComm string  `json:"actor-comm"`
	Cleanup   string  `json:"cleanup"`
	// Spans and off-CPU spells; an MR's size.
	Func      string       `json:"func"`
	DurUS     *json.Number `json:"dur-us"`
	Size      *uint64      `json:"size"`
	WaitUS    *json.Number `json:"wait-us"`
	Preempted bool         `json:"preempted"`
	NextPID   *uint32      `json:"next-pid"`
	NextComm  string       `json:"next-comm"`
}

// Next returns the next event, io.EOF at the end, or an *Error for a line
// that is not one (call Next again to go on).
func (r *Reader) Next(ev *rdma.Event) error {
	for {
		line, err := r.readLine()
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var o object
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return r.errorf("expected an event of rdmatrace trace -j, found %s (%v)", quote(line), err)
		}
		if err := r.event(&o, ev); err != nil {
			return r.errorf("%v", err)
		}
		return nil
	}
}

func quote(b []byte) string {
	if len(b) > 60 {
		return strconv.Quote(string(b[:60])) + "..."
	}
	return strconv.Quote(string(b))
}

func (r *Reader) errorf(format string, args ...any) error {
	return &Error{Source: r.source, Line: r.line, Msg: fmt.Sprintf(format, args...)}
}

// readLine returns the next line without its end; a longer line than
// MaxLine is an error and is skipped.
func (r *Reader) readLine() ([]byte, error) {
	r.line++
	line, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		n := len(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.r.ReadSlice('\n')
			n += len(line)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, r.errorf("line of %d bytes or more, expected at most %d", n, MaxLine)
	}
	if errors.Is(err, io.EOF) {
		if len(line) == 0 {
			return nil, io.EOF
		}
		err = nil // a last line without its newline
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

func (r *Reader) event(o *object, ev *rdma.Event) error {
	*ev = rdma.Event{}
	t, err := time.Parse(time.RFC3339Nano, o.Time)
	if err != nil {
		return fmt.Errorf("time %q: expected RFC 3339 (%v)", o.Time, err)
	}
	ev.Time, ev.Mono = t.UTC(), uint64(t.UnixNano())
	kinds, err := rdma.ParseEventKind(o.Event)
	if err != nil || len(kinds) != 1 {
		return fmt.Errorf("event %q: expected one of rdmatrace's event names", o.Event)
	}
	ev.Kind = kinds[0]
	if o.Res != "" {
		if ev.Res, err = rdma.ParseResType(o.Res); err != nil {
			return fmt.Errorf("res: %v", err)
		}
		ev.Flags |= rdma.EvHasRes
	}
	if o.Ifname != nil {
		ev.DevName = *o.Ifname
		ev.DevIndex = r.devIndex(ev.DevName, ev.Kind)
		ev.Flags |= rdma.EvHasDev
	}
	if o.Port != nil {
		ev.Port, ev.Flags = *o.Port, ev.Flags|rdma.EvHasPort
	}
	if o.ID != nil {
		ev.ID = *o.ID
	}
	if o.LQPN != nil {
		ev.LQPN, ev.Flags = *o.LQPN, ev.Flags|rdma.EvHasQP
		if ev.QPType, err = rdma.ParseQPType(o.Type); err != nil {
			return fmt.Errorf("type: %v", err)
		}
	}
	if o.State != "" {
		if ev.State, err = parseState(ev.Res, o.State); err != nil {
			return fmt.Errorf("state: %v", err)
		}
		ev.Flags |= rdma.EvHasState
	}
	if o.PrevState != "" {
		if ev.PrevState, err = parseState(ev.Res, o.PrevState); err != nil {
			return fmt.Errorf("prev-state: %v", err)
		}
		ev.Flags |= rdma.EvHasPrevState
	}
	if o.CMEvent != "" {
		if ev.CMEvent, err = rdma.ParseCMEvent(o.CMEvent); err != nil {
			return fmt.Errorf("cm-event: %v", err)
		}
		ev.Flags |= rdma.EvHasCM
	}
	ev.Status = o.Status
	if o.Src != "" {
		if ev.PS, err = rdma.ParsePortSpace(o.PS); err != nil {
			return fmt.Errorf("ps: %v", err)
		}
		if ev.Src, err = parseAddr(o.Src); err != nil {
			return fmt.Errorf("src-addr: %v", err)
		}
		if o.Dst != "" {
			if ev.Dst, err = parseAddr(o.Dst); err != nil {
				return fmt.Errorf("dst-addr: %v", err)
			}
		}
		ev.Flags |= rdma.EvHasAddr
	}
	if o.PID != nil {
		ev.Owner = rdma.Owner{PID: *o.PID, TID: *o.PID, Comm: o.Comm}
		if o.TGID != nil {
			ev.Owner.PID = *o.TGID
		}
		ev.Flags |= rdma.EvHasOwner | rdma.EvUser
		ev.OwnerCgroup = o.CgroupID
	}
	ev.Owner.KernName = o.KernName
	ev.Actor = rdma.Owner{PID: o.ActorPID, TID: o.ActorPID, Comm: o.ActorComm}
	if o.ActorPID == 0 && o.PID != nil {
		ev.Actor = ev.Owner // the key is left out when the owner acted
	}
	switch o.Cleanup {
	case "":
	case "exit":
		ev.Flags |= rdma.EvActorExiting
	case "close":
		ev.Flags |= rdma.EvFileClose
	default:
		return fmt.Errorf("cleanup %q: expected exit or close", o.Cleanup)
	}
	return spanFields(o, ev)
}

// spanFields reads what spans and off-CPU spells carry.
func spanFields(o *object, ev *rdma.Event) error {
	ev.Func = o.Func
	if ev.Kind == rdma.EvSpan && o.Func == "" {
		return fmt.Errorf("span without func: expected the kernel function's name")
	}
	if o.DurUS != nil {
		ns, err := micros(*o.DurUS)
		if err != nil {
			return fmt.Errorf("dur-us: %v", err)
		}
		ev.Dur, ev.Flags = ns, ev.Flags|rdma.EvHasDur
	}
	if o.Size != nil {
		ev.Size, ev.Flags = *o.Size, ev.Flags|rdma.EvHasSize
	}
	if o.WaitUS != nil {
		ns, err := micros(*o.WaitUS)
		if err != nil {
			return fmt.Errorf("wait-us: %v", err)
		}
		ev.Wait = ns
	}
	if o.Preempted {
		ev.Flags |= rdma.EvPreempted
	}
	if o.NextPID != nil {
		ev.Next = rdma.Owner{PID: *o.NextPID, TID: *o.NextPID, Comm: o.NextComm}
	}
	if ev.Kind == rdma.EvSpan && o.PID != nil {
		ev.Flags &^= rdma.EvUser // the caller of a function, not a user object's owner
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
