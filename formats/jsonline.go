package formats

import (
	"net/netip"
	"strconv"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// jsonLine is a JSON object written field by field as a layout adds them
// (appendEvent): what AppendJSON writes of the same fields, without the
// Object between. It starts with its '{'; the caller closes it.
type jsonLine []byte

// key starts a field: its comma, unless it is the first, and its key.
// The keys are the layout's own names, printable ASCII without quotes or
// backslashes (TestEventJSONIsTheObjectsJSON compares with AppendJSON,
// which escapes them): written as they are.
func (l jsonLine) key(k string) jsonLine {
	if l[len(l)-1] != '{' { // a value never ends in '{'
		l = append(l, ',')
	}
	l = append(append(l, '"'), k...)
	return append(l, '"', ':')
}

func (l jsonLine) num(k string, v uint64) jsonLine { return strconv.AppendUint(l.key(k), v, 10) }
func (l jsonLine) str(k, v string) jsonLine        { return AppendJSONString(l.key(k), v) }

func (l jsonLine) hex(k string, v uint64) jsonLine {
	return append(strconv.AppendUint(append(l.key(k), '"'), v, 16), '"')
}

func (l jsonLine) list(k string, v []string) jsonLine {
	return l.field(Field{Key: k, Kind: StrList, List: v})
}

// gid writes a GID as rdma.GIDText does, an IPv6 address straight into
// the line (its text needs no escape).
func (l jsonLine) gid(k string, g netip.Addr) jsonLine {
	if !g.Is6() || g.Is4In6() || g.Zone() != "" {
		return l.str(k, rdma.GIDText(g))
	}
	return append(g.AppendTo(append(l.key(k), '"')), '"')
}

func (l jsonLine) field(f Field) jsonLine { return appendJSONValue(l.key(f.Key), &f, "") }

func (l jsonLine) numIf(ok bool, k string, v uint64) jsonLine { return numIf(l, ok, k, v) }
func (l jsonLine) strIf(ok bool, k, v string) jsonLine        { return strIf(l, ok, k, v) }
func (l jsonLine) place(p *rdma.Placement) jsonLine           { return appendPlace(l, p) }

func (l jsonLine) keyAlways(r *rdma.Resource, k *rdma.ResKey) jsonLine {
	return keyAlways(l, r, k)
}
