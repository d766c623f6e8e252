// Package records is the wire form of the identity records a node sends
// to the fleet's log store: a QP's identity (rdma.QPIdentity) and a GID
// table entry (rdma.GIDRecord) as OTLP log attributes, and back from the
// flat fields a log store returns. The names follow OpenTelemetry's
// semantic conventions where they have one (host.name, process.pid,
// container.id, k8s.pod.uid, ...) and use an rdma.* namespace for the rest
// (docs/fleet.md lists them). Per-QP identity lives here, in log records,
// never in a metric's labels.
package records

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The records' event names (OTLP's LogRecord.event_name; VictoriaLogs
// makes it a stream field, event_name).
const (
	EventQP  = "rdma.qp.identity"
	EventGID = "rdma.gid.entry"
)

// The attribute names. The node is the resource's host.name.
const (
	KeyNode = "host.name"

	KeyDevice = "rdma.device"
	KeyPort   = "rdma.port"

	KeyQPN         = "rdma.qp.num"
	KeyQPType      = "rdma.qp.type"
	KeyCreated     = "rdma.qp.created" // Unix time in ns
	KeyCreatedSeen = "rdma.qp.created_seen"
	KeyState       = "rdma.qp.state"
	KeyTransitions = "rdma.qp.transitions"
	KeyChange      = "rdma.qp.change"
	KeyFate        = "rdma.qp.fate"
	KeyEnded       = "rdma.qp.ended" // Unix time in ns

	KeyLocalGID   = "rdma.local.gid"
	KeyLocalIPv4  = "rdma.local.ipv4"
	KeyRemoteGID  = "rdma.remote.gid"
	KeyRemoteIPv4 = "rdma.remote.ipv4"
	KeyRemoteQPN  = "rdma.remote.qp.num"

	KeyPID        = "process.pid"
	KeyComm       = "process.executable.name"
	KeyModule     = "rdma.owner.module" // a kernel module's QP
	KeyCgroup     = "process.linux.cgroup"
	KeyContainer  = "container.id"
	KeyRuntime    = "container.runtime.name"
	KeyPodUID     = "k8s.pod.uid"
	KeyNetNS      = "rdma.owner.netns"
	KeyExitCode   = "process.exit.code"
	KeyExitSignal = "rdma.owner.signal"

	KeyGID      = "rdma.gid"
	KeyGIDIndex = "rdma.gid.index"
	KeyGIDType  = "rdma.gid.type"
	KeyGIDIPv4  = "rdma.gid.ipv4"
	KeyNetdev   = "network.interface.name"
	KeyVLAN     = "rdma.gid.vlan"

	// KeyTime is the record's time as a log store returns it (VictoriaLogs'
	// _time, RFC 3339).
	KeyTime = "_time"
)

func unixNS(t time.Time) int64 { return t.UnixNano() }

// GIDText is a GID as records carry it: ::ffff:a.b.c.d for an
// IPv4-mapped one, IPv6's text for the rest.
func GIDText(g netip.Addr) string { return rdma.GIDText(g) }

// QPAttributes appends q's attributes (all but the node, which is the
// resource's) to dst.
func QPAttributes(dst []attribute.KeyValue, q *rdma.QPIdentity) []attribute.KeyValue {
	dst = append(dst,
		attribute.String(KeyChange, q.Change.String()),
		attribute.String(KeyDevice, q.Dev),
		attribute.Int64(KeyQPN, int64(q.QPN)),
		attribute.String(KeyQPType, q.Type.String()),
		attribute.Int64(KeyCreated, unixNS(q.Created)),
		attribute.String(KeyState, q.State.String()),
		attribute.String(KeyFate, q.Fate.String()))
	if q.Port != 0 {
		dst = append(dst, attribute.Int64(KeyPort, int64(q.Port)))
	}
	if q.CreatedSeen {
		dst = append(dst, attribute.Bool(KeyCreatedSeen, true))
	}
	if len(q.Transitions) > 0 {
		ts := make([]string, len(q.Transitions))
		for i, t := range q.Transitions {
			ts[i] = t.State.String() + " " + t.At.UTC().Format(time.RFC3339Nano)
		}
		dst = append(dst, attribute.StringSlice(KeyTransitions, ts))
	}
	dst = appendGID(dst, KeyLocalGID, KeyLocalIPv4, q.LocalGID)
	dst = appendGID(dst, KeyRemoteGID, KeyRemoteIPv4, q.RemoteGID)
	if q.HasRemoteQPN {
		dst = append(dst, attribute.Int64(KeyRemoteQPN, int64(q.RemoteQPN)))
	}
	o := &q.Owner
	switch {
	case o.KernName != "":
		dst = append(dst, attribute.String(KeyModule, o.KernName))
	case o.PID != 0:
		dst = append(dst, attribute.Int64(KeyPID, int64(o.PID)), attribute.String(KeyComm, o.Comm))
	}
	if p := o.Place; p != nil {
		if p.Cgroup != "" {
			dst = append(dst, attribute.String(KeyCgroup, p.Cgroup))
		}
		if p.ContainerID != "" {
			dst = append(dst, attribute.String(KeyContainer, p.ContainerID))
		}
		if p.Runtime != "" {
			dst = append(dst, attribute.String(KeyRuntime, p.Runtime))
		}
		if p.PodUID != "" {
			dst = append(dst, attribute.String(KeyPodUID, p.PodUID))
		}
		if p.NetNS != 0 {
			dst = append(dst, attribute.Int64(KeyNetNS, int64(p.NetNS)))
		}
	}
	if q.Fate != rdma.FateAlive {
		dst = append(dst, attribute.Int64(KeyEnded, unixNS(q.Ended)))
		if q.HasExit {
			dst = append(dst, attribute.Int64(KeyExitCode, int64(q.ExitCode)))
		}
		if q.Fate == rdma.FateSignal {
			dst = append(dst, attribute.String(KeyExitSignal, rdma.SignalName(q.Signal)))
		}
	}
	return dst
}

func appendGID(dst []attribute.KeyValue, key, v4key string, g netip.Addr) []attribute.KeyValue {
	if !g.IsValid() {
		return dst
	}
	dst = append(dst, attribute.String(key, GIDText(g)))
	if g.Is4In6() {
		dst = append(dst, attribute.String(v4key, g.Unmap().String()))
	}
	return dst
}

// QPBody is a QP record's message: what a person reads in a log view.
//
//	QP 17 RC on rxe0/1 of rping[812] connected to QP 18 at ::ffff:10.98.1.2
func QPBody(q *rdma.QPIdentity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "QP %d %s on %s", q.QPN, q.Type, q.Dev)
	if q.Port != 0 {
		fmt.Fprintf(&b, "/%d", q.Port)
	}
	switch o := q.Owner; {
	case o.KernName != "":
		fmt.Fprintf(&b, " of [%s]", o.KernName)
	case o.PID != 0:
		fmt.Fprintf(&b, " of %s[%d]", o.Comm, o.PID)
	}
	b.WriteString(" " + q.Change.String())
	if q.HasRemoteQPN || q.RemoteGID.IsValid() {
		b.WriteString(": peer")
		if q.HasRemoteQPN {
			fmt.Fprintf(&b, " QP %d", q.RemoteQPN)
		}
		if q.RemoteGID.IsValid() {
			b.WriteString(" at " + GIDText(q.RemoteGID))
		}
	}
	if q.Fate != rdma.FateAlive {
		b.WriteString("; " + FateText(q))
	}
	return b.String()
}

// FateText says how q's life ended, in words: "destroyed by its owner",
// "killed by SIGKILL", "freed at its owner's exit (status 1)".
func FateText(q *rdma.QPIdentity) string {
	switch q.Fate {
	case rdma.FateAlive:
		return "alive"
	case rdma.FateDestroyed:
		return "destroyed by its owner"
	case rdma.FateOwnerExit:
		if q.HasExit {
			return "freed when its owner exited with status " + strconv.Itoa(q.ExitCode)
		}
		return "freed when its owner exited"
	case rdma.FateSignal:
		return "freed when its owner was killed by " + rdma.SignalName(q.Signal)
	case rdma.FateFileClose:
		return "freed when its owner closed its device file"
	case rdma.FateDeviceRemoved:
		return "freed by the kernel at the removal of " + q.Dev
	}
	return q.Fate.String()
}

// GIDAttributes appends e's attributes (all but the node) to dst.
func GIDAttributes(dst []attribute.KeyValue, e *rdma.GIDEntry) []attribute.KeyValue {
	dst = append(dst,
		attribute.String(KeyDevice, e.DevName),
		attribute.Int64(KeyPort, int64(e.Port)),
		attribute.Int64(KeyGIDIndex, int64(e.Index)),
		attribute.String(KeyGID, GIDText(e.GID)),
		attribute.String(KeyGIDType, e.Type.Name(e.Eth)))
	if ip, ok := e.IPv4(); ok {
		dst = append(dst, attribute.String(KeyGIDIPv4, ip.String()))
	}
	if e.Netdev != "" {
		dst = append(dst, attribute.String(KeyNetdev, e.Netdev))
	}
	if e.HasVLAN {
		dst = append(dst, attribute.Int64(KeyVLAN, int64(e.VLAN)))
	}
	return dst
}

// GIDBody is a GID record's message.
//
//	GID ::ffff:10.98.1.2 RoCE v2 on rxe0/1 index 1 (eth0)
func GIDBody(e *rdma.GIDEntry) string {
	s := fmt.Sprintf("GID %s %s on %s/%d index %d", GIDText(e.GID), e.Type.Name(e.Eth), e.DevName, e.Port, e.Index)
	if e.Netdev != "" {
		s += " (" + e.Netdev + ")"
	}
	return s
}

// Fields is one record as a log store returns it: each field's name and
// text (VictoriaLogs returns every value as text; arrays as JSON).
type Fields map[string]string

// ParseQP reads a QP record back. A field that is there but cannot be
// read is an error naming it; the node, device, QPN and creation time
// must be there.
func ParseQP(f Fields) (rdma.QPIdentity, error) {
	var q rdma.QPIdentity
	p := parser{f: f}
	q.Node = p.need(KeyNode)
	q.Dev = p.need(KeyDevice)
	q.QPN = uint32(p.uint(KeyQPN, 32, true))
	q.Created = p.unixNS(KeyCreated, true)
	q.Time = p.time(KeyTime)
	q.Port = uint32(p.uint(KeyPort, 32, false))
	if v, ok := f[KeyQPType]; ok {
		t, err := rdma.ParseQPType(v)
		p.fail(KeyQPType, v, err)
		q.Type = t
	}
	if v, ok := f[KeyState]; ok {
		s, err := rdma.ParseQPState(v)
		p.fail(KeyState, v, err)
		q.State = s
	}
	if v, ok := f[KeyChange]; ok {
		c, ok := rdma.ParseQPChange(v)
		p.failIf(!ok, KeyChange, v, "created, exists, connected, failed or ended")
		q.Change = c
	}
	if v, ok := f[KeyFate]; ok {
		fate, ok := rdma.ParseQPFate(v)
		p.failIf(!ok, KeyFate, v, "alive, destroyed, owner-exit, signal, file-close or device-removed")
		q.Fate = fate
	}
	q.CreatedSeen = f[KeyCreatedSeen] == "true"
	if v, ok := f[KeyTransitions]; ok && v != "" {
		var ts []string
		if err := json.Unmarshal([]byte(v), &ts); err != nil {
			p.failIf(true, KeyTransitions, v, "a JSON array of \"STATE TIME\"")
		}
		for _, t := range ts {
			state, at, _ := strings.Cut(t, " ")
			s, err1 := rdma.ParseQPState(state)
			tm, err2 := time.Parse(time.RFC3339Nano, at)
			if err1 != nil || err2 != nil {
				p.failIf(true, KeyTransitions, t, "STATE TIME (RTS 2026-01-02T03:04:05.123456789Z)")
				continue
			}
			q.Transitions = append(q.Transitions, rdma.QPTransition{State: s, At: tm})
		}
	}
	q.LocalGID = p.gid(KeyLocalGID)
	q.RemoteGID = p.gid(KeyRemoteGID)
	if _, ok := f[KeyRemoteQPN]; ok {
		q.RemoteQPN, q.HasRemoteQPN = uint32(p.uint(KeyRemoteQPN, 32, true)), true
	}
	q.Owner.KernName = f[KeyModule]
	q.Owner.PID = uint32(p.uint(KeyPID, 32, false))
	q.Owner.TID = q.Owner.PID
	q.Owner.Comm = f[KeyComm]
	pl := rdma.Placement{Cgroup: f[KeyCgroup], ContainerID: f[KeyContainer], Runtime: f[KeyRuntime], PodUID: f[KeyPodUID],
		NetNS: p.uint(KeyNetNS, 64, false)}
	if pl != (rdma.Placement{}) {
		q.Owner.Place = &pl
	}
	if q.Fate != rdma.FateAlive {
		q.Ended = p.unixNS(KeyEnded, true)
	}
	if _, ok := f[KeyExitCode]; ok {
		q.ExitCode, q.HasExit = int(p.uint(KeyExitCode, 8, true)), true
	}
	if v, ok := f[KeyExitSignal]; ok {
		sig, ok := rdma.ParseSignalName(v)
		p.failIf(!ok, KeyExitSignal, v, "a signal's name (SIGKILL)")
		q.Signal = sig
	}
	return q, p.err
}

// ParseGID reads a GID record back; the node, device, port and GID must
// be there.
func ParseGID(f Fields) (rdma.GIDRecord, error) {
	var r rdma.GIDRecord
	p := parser{f: f}
	r.Node = p.need(KeyNode)
	r.DevName = p.need(KeyDevice)
	r.Port = uint32(p.uint(KeyPort, 32, true))
	r.Index = uint32(p.uint(KeyGIDIndex, 32, false))
	if _, ok := f[KeyGID]; !ok {
		p.failIf(true, KeyGID, "", "a GID")
	}
	r.GID = p.gid(KeyGID)
	r.Time = p.time(KeyTime)
	r.Netdev = f[KeyNetdev]
	r.Eth = r.Netdev != ""
	if v, ok := f[KeyGIDType]; ok {
		t, err := rdma.ParseGIDType(v)
		p.fail(KeyGIDType, v, err)
		r.Type = t
	}
	if _, ok := f[KeyVLAN]; ok {
		r.VLAN, r.HasVLAN = uint16(p.uint(KeyVLAN, 12, true)), true
	}
	return r, p.err
}

// parser reads fields, keeping the first error.
type parser struct {
	f   Fields
	err error
}

func (p *parser) failIf(bad bool, key, v, want string) {
	if bad && p.err == nil {
		p.err = fmt.Errorf("field %s: expected %s, found %q", key, want, clip(v))
	}
}

func (p *parser) fail(key, v string, err error) {
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("field %s %q: %w", key, clip(v), err)
	}
}

func (p *parser) need(key string) string {
	v, ok := p.f[key]
	p.failIf(!ok || v == "", key, v, "a value (the record has none)")
	return v
}

func (p *parser) uint(key string, bits int, need bool) uint64 {
	v, ok := p.f[key]
	if !ok {
		p.failIf(need, key, v, "a number (the record has none)")
		return 0
	}
	n, err := strconv.ParseUint(v, 10, bits)
	p.failIf(err != nil, key, v, "a number")
	return n
}

func (p *parser) unixNS(key string, need bool) time.Time {
	v, ok := p.f[key]
	if !ok {
		p.failIf(need, key, v, "a time in ns since 1970 (the record has none)")
		return time.Time{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	p.failIf(err != nil || n <= 0, key, v, "a time in ns since 1970")
	return time.Unix(0, n).UTC()
}

func (p *parser) time(key string) time.Time {
	v, ok := p.f[key]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	p.failIf(err != nil, key, v, "an RFC 3339 time")
	return t
}

func (p *parser) gid(key string) netip.Addr {
	v, ok := p.f[key]
	if !ok {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(v)
	if err != nil || !a.Is6() || a.Zone() != "" {
		p.failIf(true, key, v, "a GID (IPv6 text, ::ffff:a.b.c.d for RoCE v2 over IPv4)")
		return netip.Addr{}
	}
	return a
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
