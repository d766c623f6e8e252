package formats

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Kind says how a Field's value is written.
type Kind uint8

const (
	Num     Kind = iota // a JSON number
	Str                 // a JSON string
	Hex                 // a key: a JSON string of lower-case hex digits (iproute2), 0x... in text
	StrList             // a JSON array of strings (an SRQ's QP list)
	Bool                // a JSON true/false; "on"/"off" in text (iproute2's print_on_off)
	Int                 // a signed JSON number, stored in Num as int64
	Secs                // a duration: milliseconds in Num, a JSON number of seconds ("1.5"), "1.5s" in text
	Time                // a time: Unix nanoseconds in Num, RFC 3339 with nanoseconds in UTC (formatted on output: no allocation)
	Micros              // a duration: nanoseconds in Num, a JSON number of microseconds ("12.345"), "12.345us" in text
	NumList             // a JSON array of numbers, List holding them in decimal (a counter's QPs)
	Frames              // call frames: Str their JSON array (made by this package), List each in words
)

// Field is one key and value of an object, in iproute2's key names.
type Field struct {
	Key  string
	Kind Kind
	Num  uint64
	Str  string
	List []string
}

// Text gives the value as a text line shows it.
func (f *Field) Text() string {
	switch f.Kind {
	case Num:
		return strconv.FormatUint(f.Num, 10)
	case Hex:
		return "0x" + strconv.FormatUint(f.Num, 16)
	case Bool:
		return onOff(f.Num != 0)
	case Int:
		return strconv.FormatInt(int64(f.Num), 10)
	case Secs:
		return string(appendSecs(nil, f.Num)) + "s"
	case Time:
		return timeOf(f.Num).Format(time.RFC3339Nano)
	case Micros:
		return string(appendSecs(nil, f.Num)) + "us"
	case StrList, NumList:
		s := ""
		for i, v := range f.List {
			if i > 0 {
				s += ","
			}
			s += v
		}
		return s
	case Frames:
		return strings.Join(f.List, " < ")
	}
	return f.Str
}

func timeOf(ns uint64) time.Time { return time.Unix(0, int64(ns)).UTC() }

// timeField is a Time field.
func timeField(k string, t time.Time) Field {
	return Field{Key: k, Kind: Time, Num: uint64(t.UnixNano())}
}

// appendSecs writes milliseconds as seconds with up to three decimals
// (and so nanoseconds as microseconds).
func appendSecs(b []byte, ms uint64) []byte {
	b = strconv.AppendUint(b, ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		d := strconv.AppendUint([]byte{'.'}, 1000+frac, 10) // ".1xyz"
		d = append(d[:1], d[2:]...)
		for d[len(d)-1] == '0' {
			d = d[:len(d)-1]
		}
		b = append(b, d...)
	}
	return b
}

// Object is one rendered object: its fields, in output order.
type Object []Field

func (o Object) num(k string, v uint64) Object { return append(o, Field{Key: k, Kind: Num, Num: v}) }
func (o Object) str(k, v string) Object        { return append(o, Field{Key: k, Kind: Str, Str: v}) }
func (o Object) hex(k string, v uint64) Object { return append(o, Field{Key: k, Kind: Hex, Num: v}) }

func (o Object) field(f Field) Object              { return append(o, f) }
func (o Object) gid(k string, g netip.Addr) Object { return o.str(k, rdma.GIDText(g)) }

// numIf and strIf add a key only when the source gave it (ok): `rdma -j`
// leaves out what the kernel left out.
func (o Object) numIf(ok bool, k string, v uint64) Object { return numIf(o, ok, k, v) }
func (o Object) strIf(ok bool, k, v string) Object        { return strIf(o, ok, k, v) }

func numIf[O fieldAppender[O]](o O, ok bool, k string, v uint64) O {
	if ok {
		o = o.num(k, v)
	}
	return o
}

func strIf[O fieldAppender[O]](o O, ok bool, k, v string) O {
	if ok {
		o = o.str(k, v)
	}
	return o
}

// fieldAppender is where a layout puts its fields: an Object, or a JSON
// line written as they come (jsonLine).
type fieldAppender[O any] interface {
	num(k string, v uint64) O
	str(k, v string) O
	hex(k string, v uint64) O
	list(k string, v []string) O
	field(f Field) O
	gid(k string, g netip.Addr) O
	numIf(ok bool, k string, v uint64) O
	strIf(ok bool, k, v string) O
	keyAlways(r *rdma.Resource, k *rdma.ResKey) O
	place(p *rdma.Placement) O
}

// place adds where the owner runs: the keys `cgroup`, `runtime`,
// `container-id`, `job` (a Slurm job's id), `pod-uid`, `pod-namespace` and
// `pod-name` (where the node names the pod), `pidns-pid` (its pid in its own pid
// namespace, when that is not ours) and `netns` (the namespace's inode),
// each when known.
func (o Object) place(p *rdma.Placement) Object { return AppendPlace(o, p) }

// AppendPlace is place for other renderers.
func AppendPlace(o Object, p *rdma.Placement) Object { return appendPlace(o, p) }

func appendPlace[O fieldAppender[O]](o O, p *rdma.Placement) O {
	if p == nil {
		return o
	}
	o = o.strIf(p.Cgroup != "", "cgroup", p.Cgroup)
	o = o.strIf(p.Runtime != "", "runtime", p.Runtime)
	o = o.strIf(p.ContainerID != "", "container-id", p.ContainerID)
	if job := p.Job(); job != "" {
		o = o.str("job", job)
	}
	o = o.strIf(p.PodUID != "", "pod-uid", p.PodUID)
	o = o.strIf(p.PodName != "", "pod-namespace", p.PodNamespace)
	o = o.strIf(p.PodName != "", "pod-name", p.PodName)
	o = o.numIf(p.NSPid != 0, "pidns-pid", uint64(p.NSPid))
	return o.numIf(p.NetNS != 0, "netns", p.NetNS)
}

func (o Object) list(k string, v []string) Object {
	return append(o, Field{Key: k, Kind: StrList, List: v})
}

// Get returns the field named k.
func (o Object) Get(k string) (Field, bool) {
	for _, f := range o {
		if f.Key == k {
			return f, true
		}
	}
	return Field{}, false
}

// key adds a resource key of rdma's table when r has it, as iproute2
// prints it; keyAlways whether or not (keys `rdma -j` always writes).
func (o Object) key(r *rdma.Resource, k *rdma.ResKey) Object {
	if !k.Present(r) {
		return o
	}
	return o.keyAlways(r, k)
}

func (o Object) keyAlways(r *rdma.Resource, k *rdma.ResKey) Object { return keyAlways(o, r, k) }

func keyAlways[O fieldAppender[O]](o O, r *rdma.Resource, k *rdma.ResKey) O {
	switch {
	case k.Num != nil && k.Hex:
		return o.hex(k.Name, k.Num(r))
	case k.Num != nil:
		return o.num(k.Name, k.Num(r))
	}
	return o.str(k.Name, k.Str(r))
}

// appendQP adds a QP's keys after its device, in iproute2's order: port,
// lqpn, rqpn, type, state, rq-psn, sq-psn, path-mig-state, pdn. What the
// source left out is left out (netlink always gives lqpn, type and state).
func appendQP(o Object, r *rdma.Resource) Object {
	o = o.key(r, &rdma.KeyPort).keyAlways(r, &rdma.KeyLQPN).key(r, &rdma.KeyRQPN)
	o = o.key(r, &rdma.KeyType).key(r, &rdma.KeyState).key(r, &rdma.KeyRQPSN).key(r, &rdma.KeySQPSN)
	return o.key(r, &rdma.KeyPathMig).key(r, &rdma.KeyPDN)
}

// ResourceObject lays out a resource with iproute2 6.1's JSON keys, in its
// order, leaving out what the kernel left out. Withheld keys are listed
// under "withheld" rather than shown as zero.
func ResourceObject(r *rdma.Resource) Object {
	o := make(Object, 0, 14)
	o = o.keyAlways(r, &rdma.KeyIfindex).keyAlways(r, &rdma.KeyIfname)
	switch r.Type {
	case rdma.ResQP:
		o = appendQP(o, r)
	case rdma.ResCMID:
		o = o.key(r, &rdma.KeyPort).key(r, &rdma.KeyCMIDN).key(r, &rdma.KeyLQPN).key(r, &rdma.KeyQPType)
		o = o.keyAlways(r, &rdma.KeyState).keyAlways(r, &rdma.KeyPS)
	case rdma.ResCQ:
		o = o.key(r, &rdma.KeyCQN).keyAlways(r, &rdma.KeyCQE).keyAlways(r, &rdma.KeyUsers).key(r, &rdma.KeyPollCtx)
		if rdma.KeyDIM.Present(r) {
			o = o.boolean(rdma.KeyDIM.Name, r.DIM)
		}
		o = o.key(r, &rdma.KeyCTXN)
	case rdma.ResMR:
		o = o.key(r, &rdma.KeyMRN).key(r, &rdma.KeyRKey).key(r, &rdma.KeyLKey).key(r, &rdma.KeyIOVA)
		o = o.keyAlways(r, &rdma.KeyMRLen).key(r, &rdma.KeyPDN)
	case rdma.ResPD:
		o = o.key(r, &rdma.KeyPDN).key(r, &rdma.KeyLocalDMALKey).keyAlways(r, &rdma.KeyUsers)
		o = o.key(r, &rdma.KeyUnsafeGlobalRKey).key(r, &rdma.KeyCTXN)
	case rdma.ResCTX:
		o = o.keyAlways(r, &rdma.KeyCTXN)
	case rdma.ResSRQ:
		o = o.keyAlways(r, &rdma.KeySRQN).keyAlways(r, &rdma.KeyType)
		if len(r.QPs) > 0 {
			o = o.list(rdma.KeyLQPN.Name, qpRanges(r.QPs))
		}
		o = o.key(r, &rdma.KeyPDN).key(r, &rdma.KeyCQN)
	}
	o = o.key(r, &rdma.KeyPID)
	if c := rdma.KeyComm.Str(r); c != "" {
		o = o.str(rdma.KeyComm.Name, c)
	}
	o = o.place(r.Owner.Place)
	if r.Type == rdma.ResCMID {
		// iproute2 prints the addresses after the owner.
		o = o.key(r, &rdma.KeySrcAddr).key(r, &rdma.KeyDstAddr)
	}
	if r.Withheld != 0 {
		o = o.list("withheld", withheldKeys(r.Withheld))
	}
	return o
}

// IPRouteAddr writes an address the way iproute2 does: "ip:port", with no
// brackets even for IPv6.
func IPRouteAddr(ip string, port uint16) string { return ip + ":" + strconv.Itoa(int(port)) }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func qpRanges(qs []rdma.QPRange) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		if q.Min == q.Max {
			out[i] = strconv.FormatUint(uint64(q.Min), 10)
		} else {
			out[i] = fmt.Sprintf("%d-%d", q.Min, q.Max)
		}
	}
	return out
}

func withheldKeys(f rdma.Field) []string {
	var out []string
	for _, k := range []struct {
		f    rdma.Field
		name string
	}{{rdma.HasRKey, rdma.KeyRKey.Name}, {rdma.HasLKey, rdma.KeyLKey.Name}, {rdma.HasLocalDMALKey, rdma.KeyLocalDMALKey.Name}} {
		if f&k.f != 0 {
			out = append(out, k.name)
		}
	}
	return out
}

// SummaryObject lays out one device's resource counts as `rdma -j res show`.
func SummaryObject(s *rdma.Summary) Object {
	o := make(Object, 0, 2+len(s.Counts))
	o = o.num("ifindex", uint64(s.DevIndex)).str("ifname", s.DevName)
	for _, c := range s.Counts {
		o = o.num(c.Name, c.Value)
	}
	return o
}

// DeviceObject lays out a device as `rdma -j dev show`; with details as
// `rdma -d -j dev show` (adaptive-moderation), plus what iproute2 does not
// print: the protocol and the number of ports. iproute2's caps are not
// printed.
func DeviceObject(d *rdma.Device, details bool) Object {
	o := Object{}.num("ifindex", uint64(d.Index)).str("ifname", d.Name).str("node_type", d.NodeType.String())
	if d.FWVersion != "" {
		o = o.str("fw", d.FWVersion)
	}
	o = o.str("node_guid", guid(d.NodeGUID)).str("sys_image_guid", guid(d.SysImageGUID))
	if !details {
		return o
	}
	if d.DIM != nil {
		o = o.boolean("adaptive-moderation", *d.DIM)
	}
	if d.Protocol != "" {
		o = o.str("protocol", d.Protocol)
	}
	// Last, as rdma -d dev prints them (on a line of their own in text).
	return o.num("ports", uint64(d.Ports)).list("caps", rdma.DeviceCapNames(d.CapFlags))
}

// PortObject lays out a port as `rdma -j link show`.
func PortObject(p *rdma.Port) Object {
	o := Object{}.num("ifindex", uint64(p.DevIndex)).str("ifname", p.DevName).num("port", uint64(p.Port))
	if p.Has&rdma.HasSubnetPrefix != 0 {
		o = o.str("subnet_prefix", guid(p.SubnetPrefix))
	}
	if p.Has&rdma.HasLID != 0 {
		o = o.num("lid", uint64(p.LID))
	}
	if p.Has&rdma.HasSMLID != 0 {
		o = o.num("sm_lid", uint64(p.SMLID))
	}
	if p.Has&rdma.HasLMC != 0 {
		o = o.num("lmc", uint64(p.LMC))
	}
	o = o.str("state", p.State.String()).str("physical_state", p.PhysState.String())
	if p.Has&rdma.HasNetdev != 0 {
		o = o.str("netdev", p.Netdev).num("netdev_index", uint64(p.NetdevIndex))
	}
	return o
}

// guid prints a 64-bit GUID as iproute2 does: four groups of 16 bits.
func guid(v uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v>>48, (v>>32)&0xffff, (v>>16)&0xffff, v&0xffff)
}

func (o Object) boolean(k string, v bool) Object {
	f := Field{Key: k, Kind: Bool}
	if v {
		f.Num = 1
	}
	return append(o, f)
}
