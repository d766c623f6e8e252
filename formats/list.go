package formats

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ps"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// A List lays out rows of one kind for every view of a listing command
// (dev, link, res, stat, ps, ports, smc, gid): an Object each for JSON and
// NDJSON, lines each for text, and a table of them all.
type List[R any] struct {
	Object func(*R) Object
	// Text writes one row's lines; nil where the command has no text view.
	Text func(*TextWriter, *R) error
	// Table lays out every row; nil: ObjectTable of their Objects.
	Table func([]R) *Table
}

// Of lays out rows for every view.
func (l List[R]) Of(rows []R) Listing {
	objs := make([]Object, len(rows))
	for i := range rows {
		objs[i] = l.Object(&rows[i])
	}
	out := Listing{Objects: objs, table: func() *Table { return ObjectTable(objs) }}
	if l.Table != nil {
		out.table = func() *Table { return l.Table(rows) }
	}
	if l.Text != nil {
		out.text = func(tw *TextWriter, i int) error { return l.Text(tw, &rows[i]) }
	}
	return out
}

// A Listing is rows laid out by a List, ready for the view -o chooses.
type Listing struct {
	Objects []Object
	text    func(*TextWriter, int) error
	table   func() *Table
}

// Write writes the listing in format f: JSON (one array, indented when
// pretty), NDJSON, text or a table (none at all when there is no row).
func (l Listing) Write(w io.Writer, f Format, pretty bool) error {
	switch f {
	case FormatJSON, FormatNDJSON:
		s := NewObjectSink(w, f, pretty, Objects)
		for _, o := range l.Objects {
			if err := s.Write(o); err != nil {
				return err
			}
		}
		return s.Close()
	case FormatText:
		tw := NewTextWriter(w)
		for i := range l.Objects {
			if err := l.text(tw, i); err != nil {
				return err
			}
		}
		return tw.Flush()
	}
	t := l.table()
	if t.Len() == 0 {
		return nil
	}
	return t.Render(w)
}

// WriteSections writes the listing of each network namespace (names[i]
// is ls[i]'s): JSON as one array (or NDJSON) with netns-name first in each
// object, the human views as a "netns NAME:" line before each namespace's
// rows, as `ip -all netns exec` prints; a namespace without rows is left
// out.
func WriteSections(w io.Writer, f Format, pretty bool, names []string, ls []Listing) error {
	if f == FormatJSON || f == FormatNDJSON {
		var all Listing
		for i, l := range ls {
			for _, o := range l.Objects {
				all.Objects = append(all.Objects, append(Object{{Key: "netns-name", Kind: Str, Str: names[i]}}, o...))
			}
		}
		return all.Write(w, f, pretty)
	}
	for i, l := range ls {
		if len(l.Objects) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "netns %s:\n", Sanitize(names[i])); err != nil {
			return err
		}
		if err := l.Write(w, f, pretty); err != nil {
			return err
		}
	}
	return nil
}

// ObjectTable lays out objects as columns, one per key: stat's counters,
// and the tables of -d (dev -d, res qp -d), which show every key the JSON
// has. A key only some objects have goes after the key it follows in them
// (rqpn after lqpn, though a GSI QP has none); a key an object lacks is "-".
func ObjectTable(objs []Object) *Table {
	var keys []string
	for _, o := range objs {
		at := 0 // where the next new key goes: after the last key seen
		for _, f := range o {
			if i := slices.Index(keys, f.Key); i >= 0 {
				at = i + 1
				continue
			}
			keys = slices.Insert(keys, at, f.Key)
			at++
		}
	}
	col := map[string]int{}
	head := make([]string, len(keys))
	for i, k := range keys {
		col[k], head[i] = i, strings.ToUpper(k)
	}
	t := NewTable(head...)
	for _, o := range objs {
		row := make([]string, len(keys))
		for i := range o {
			row[col[o[i].Key]] = o[i].Text()
		}
		t.Append(row...)
	}
	return t
}

// The lists of the listing commands.

// DeviceList is dev's: with details, the table has a column for every key.
func DeviceList(details bool) List[rdma.Device] {
	l := List[rdma.Device]{
		Object: func(d *rdma.Device) Object { return DeviceObject(d, details) },
		Text:   func(tw *TextWriter, d *rdma.Device) error { return tw.Device(d, details) },
		Table:  DeviceTable,
	}
	if details {
		l.Table = nil
	}
	return l
}

// PortList is link's: with details, the netdev's index in text.
func PortList(details bool) List[rdma.Port] {
	return List[rdma.Port]{Object: PortObject, Table: PortTable,
		Text: func(tw *TextWriter, p *rdma.Port) error { return tw.Port(p, details) }}
}

// ResourceList is res TYPE's: with details, the table has a column for
// every key of -j.
func ResourceList(t rdma.ResType, details bool) List[rdma.Resource] {
	l := List[rdma.Resource]{Object: ResourceObject, Text: (*TextWriter).Resource,
		Table: func(rs []rdma.Resource) *Table { return ResourceTable(t, rs) }}
	if details {
		l.Table = nil
	}
	return l
}

// SummaryList is res's per-device counts.
var SummaryList = List[rdma.Summary]{Object: SummaryObject, Text: (*TextWriter).Summary, Table: SummaryTable}

// PortStatsList, QPCounterModeList and QPCounterList are stat's, stat qp
// mode's and stat qp's; their text names the link first.
var (
	PortStatsList = List[rdma.PortStats]{Object: PortStatsObject, Table: PortStatsTable,
		Text: func(tw *TextWriter, s *rdma.PortStats) error { return tw.linkObject(PortStatsObject(s)) }}
	QPCounterModeList = List[rdma.QPCounterMode]{Object: QPCounterModeObject,
		Text: func(tw *TextWriter, m *rdma.QPCounterMode) error { return tw.linkObject(QPCounterModeObject(m)) }}
	QPCounterList = List[rdma.QPCounter]{Object: QPCounterObject,
		Text: func(tw *TextWriter, c *rdma.QPCounter) error { return tw.linkObject(QPCounterObject(c)) }}
)

// linkObject writes a counter object as "link DEV/PORT" and its keys.
func (t *TextWriter) linkObject(o Object) error {
	name, _ := o.Get("ifname")
	port, _ := o.Get("port")
	return t.Object("link "+name.Str+"/"+port.Text(), o, "ifindex", "ifname", "port")
}

// ProcessList is ps's.
var ProcessList = List[ps.Row]{Object: ProcessObject, Table: ProcessTable}

// HolderList and ConflictList are ports' and ports --conflicts'.
var (
	HolderList   = List[ports.Row]{Object: HolderObject, Table: HolderTable}
	ConflictList = List[ports.Conflict]{Object: ConflictObject, Table: ConflictTable}
)

// SMCList and LinkGroupList are smc's and smc linkgroup's.
var (
	SMCList       = List[ports.SMCRow]{Object: SMCObject, Table: SMCTable}
	LinkGroupList = List[ports.LinkGroupRow]{Object: LinkGroupObject, Table: LinkGroupTable}
)

// SMCDeviceList is smc device's; netdev names an interface index.
func SMCDeviceList(netdev func(uint32) string) List[ports.DevicePort] {
	return List[ports.DevicePort]{Object: SMCDeviceObject,
		Table: func(dps []ports.DevicePort) *Table { return SMCDeviceTable(dps, netdev) }}
}

// GIDList is gid's.
var GIDList = List[rdma.GIDEntry]{Object: GIDObject, Table: GIDTable}

// GIDChange is one line of gid -w: an entry added, removed or changed at a
// moment, NDJSON or a line of text.
func GIDChange(w io.Writer, f Format, at time.Time, what string, g *rdma.GIDEntry) error {
	var err error
	if f == FormatNDJSON {
		_, err = w.Write(append(AppendJSON(nil, GIDChangeObject(at, what, g)), '\n'))
	} else {
		_, err = io.WriteString(w, GIDChangeLine(at, what, g)+"\n")
	}
	return err
}

// WriteIn writes rows listed by network namespace (names[i] is rows[i]'s):
// with sections, as WriteSections does; else the one listing of ours.
func (l List[R]) WriteIn(w io.Writer, f Format, pretty, sections bool, names []string, rows [][]R) error {
	if !sections {
		return l.Of(rows[0]).Write(w, f, pretty)
	}
	ls := make([]Listing, len(rows))
	for i := range rows {
		ls[i] = l.Of(rows[i])
	}
	return WriteSections(w, f, pretty, names, ls)
}
