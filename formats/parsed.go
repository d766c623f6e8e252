package formats

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Renderers for records read from saved state (`rdmatrace parse`).

// ParsedObject lays out a parsed record as one NDJSON object. rdma_cm IDs
// use the legacy columns under the keys source, line, dev-type, ifname,
// port, netdev, src-addr, dst-addr, ps, state, lqpn, then the attributes
// only `rdma` output has (cm-idn, qp-type), then pid, comm and the extra
// columns under their lower-cased names. QPs carry "res": "qp" and
// iproute2's qp keys. Absent values are left out, as `rdma -j` does.
func ParsedObject(source string, line int, r *rdma.Resource) Object {
	h := func(f rdma.Field) bool { return r.Has&f != 0 }
	o := make(Object, 0, 16)
	o = o.str("source", source).num("line", uint64(line))
	if r.Type == rdma.ResQP {
		o = appendQP(o.str("res", "qp").keyAlways(r, &rdma.KeyIfname), r)
	} else {
		if r.DevType != "" {
			o = o.str(rdma.KeyDevType.Name, r.DevType)
		}
		o = o.keyAlways(r, &rdma.KeyIfname).key(r, &rdma.KeyPort)
		if r.Netdev != "" {
			o = o.str("netdev", r.Netdev)
		}
		if h(rdma.HasSrcAddr) {
			o = o.str(rdma.KeySrcAddr.Name, Endpoint(r.Src, r.SrcZone))
		}
		if h(rdma.HasDstAddr) {
			o = o.str(rdma.KeyDstAddr.Name, Endpoint(r.Dst, r.DstZone))
		}
		o = o.strIf(h(rdma.HasPS), rdma.KeyPS.Name, psName(r.PS)).key(r, &rdma.KeyState)
		o = o.key(r, &rdma.KeyLQPN).key(r, &rdma.KeyCMIDN).key(r, &rdma.KeyQPType)
	}
	o = o.key(r, &rdma.KeyPID)
	if c := rdma.KeyComm.Str(r); c != "" {
		o = o.str(rdma.KeyComm.Name, c) // as `rdma -j`: a kernel owner is the one without a pid
	}
	for _, kv := range r.Extra {
		k := strings.ToLower(kv.Key)
		if _, taken := o.Get(k); taken {
			k = "extra-" + k // an extra column named like one of ours
		}
		o = o.str(k, kv.Value)
	}
	return o
}

// Endpoint writes ip:port, and [ip]:port or [ip%zone]:port for IPv6.
func Endpoint(ap netip.AddrPort, zone string) string {
	if zone != "" && ap.Addr().Is6() {
		ap = netip.AddrPortFrom(ap.Addr().WithZone(zone), ap.Port())
	}
	return ap.String()
}

// psName is the port space as iproute2 names it, and SDP, which only
// legacy dumps hold.
func psName(ps rdma.PortSpace) string {
	if ps == rdma.PSSDP {
		return "SDP"
	}
	return ps.String()
}

// ParsedTable collects parsed records and renders them as tables: one for
// rdma_cm IDs in the legacy columns (plus a SOURCE column, and columns for
// whatever extras the records have), one for QPs. It holds every row until
// Render, as any aligned table must; a caller with many records renders
// it every TableRows records and Resets it (or streams NDJSON or the
// legacy layout instead).
//
// An extra column becomes a heading, so only names made of [a-z0-9_-] (in
// either case) qualify, and at most MaxExtraColumns of them: a dump whose
// every record has a column of its own would otherwise make the table
// records times columns large. Values left out are counted (Notes); NDJSON
// keeps them all.
type ParsedTable struct {
	cm, qp [][]string
	extras []string // extra column names, in first-seen order
	cmExtr [][]rdma.KV

	badKeys    int                 // values under names that cannot be headings
	overCap    map[string]struct{} // extra columns over MaxExtraColumns, up to maxCounted
	overCapped bool                // overCap stopped counting
}

// MaxExtraColumns bounds the dump's own extra columns in the rdma_cm ID
// table (`rdma -d` adds a handful of drv_* attributes; legacy dumps PID,
// COMM, TOS).
const MaxExtraColumns = 24

// TableRows is how many records a table should hold before it is rendered:
// tablewriter keeps several copies of every cell: 50 k rows of a
// legacy dump took 155 MB (RSS), 10 k rows 53 MB.
const TableRows = 10_000

// maxCounted bounds the names kept only to count them.
const maxCounted = 1 << 16

// cmFixed are the leading columns of the rdma_cm ID table.
var cmFixed = []string{"SOURCE", "TYPE", "DEVICE", "PORT", "NET_DEV", "SRC_ADDR", "DST_ADDR", "SPACE", "STATE", "QP_NUM"}

// Add copies what the table needs from r, read at line of source.
func (t *ParsedTable) Add(source string, line int, r *rdma.Resource) {
	h := func(f rdma.Field) bool { return r.Has&f != 0 }
	src := source + ":" + strconv.Itoa(line)
	num := func(f rdma.Field, v uint32) string {
		if !h(f) {
			return ""
		}
		return strconv.FormatUint(uint64(v), 10)
	}
	comm := r.Owner.Comm
	if r.Owner.KernName != "" {
		comm = "[" + r.Owner.KernName + "]"
	}
	if r.Type == rdma.ResQP {
		link := r.DevName + "/-"
		if h(rdma.HasPort) {
			link = r.DevName + "/" + strconv.FormatUint(uint64(r.Port), 10)
		}
		state, typ := "", ""
		if h(rdma.HasState) {
			state = r.QPState.String()
		}
		if h(rdma.HasQPType) {
			typ = r.QPType.String()
		}
		t.qp = append(t.qp, []string{src, link, num(rdma.HasLQPN, r.LQPN), num(rdma.HasRQPN, r.RQPN),
			typ, state, num(rdma.HasPDN, r.PDN), num(rdma.HasPID, r.Owner.PID), comm})
		return
	}
	var src4, dst4, ps, state string
	if h(rdma.HasSrcAddr) {
		src4 = Endpoint(r.Src, r.SrcZone)
	}
	if h(rdma.HasDstAddr) {
		dst4 = Endpoint(r.Dst, r.DstZone)
	}
	if h(rdma.HasPS) {
		ps = psName(r.PS)
	}
	if h(rdma.HasState) {
		state = r.CMState.String()
	}
	row := []string{src, r.DevType, r.DevName, num(rdma.HasPort, r.Port), r.Netdev, src4, dst4, ps, state, num(rdma.HasLQPN, r.LQPN)}
	// Extras, by upper-case column name; the model's own attributes too.
	var ex []rdma.KV
	add := func(k, v string) {
		if v == "" {
			return
		}
		if !slices.Contains(t.extras, k) {
			if extraRank(k) == len(modelExtras) && len(t.extras)-t.modelColumns() >= MaxExtraColumns {
				t.countOverCap(k)
				return
			}
			t.extras = append(t.extras, k)
			// The model's own attributes lead, in a fixed order.
			slices.SortStableFunc(t.extras, func(a, b string) int { return extraRank(a) - extraRank(b) })
		}
		ex = append(ex, rdma.KV{Key: k, Value: v})
	}
	add("CM_IDN", num(rdma.HasCMIDN, r.CMIDN))
	if h(rdma.HasQPType) {
		add("QP_TYPE", r.QPType.String())
	}
	add("PID", num(rdma.HasPID, r.Owner.PID))
	add("COMM", comm)
	for _, kv := range r.Extra {
		if !headingName(kv.Key) {
			t.badKeys++
			continue
		}
		add(strings.ToUpper(kv.Key), kv.Value)
	}
	t.cm = append(t.cm, row)
	t.cmExtr = append(t.cmExtr, ex)
}

// headingName reports whether an extra column's name may be a heading:
// 1 to 64 of [a-z0-9_-], in either case (legacy headers are upper case).
// Anything else, an escape sequence above all, stays out of the table.
func headingName(k string) bool {
	if len(k) == 0 || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i] | 0x20 // lower case for letters; digits, '_' and '-' stay apart
		if !(c >= 'a' && c <= 'z' || k[i] >= '0' && k[i] <= '9' || k[i] == '_' || k[i] == '-') {
			return false
		}
	}
	return true
}

func (t *ParsedTable) modelColumns() int {
	n := 0
	for _, k := range t.extras {
		if extraRank(k) < len(modelExtras) {
			n++
		}
	}
	return n
}

func (t *ParsedTable) countOverCap(k string) {
	if t.overCap == nil {
		t.overCap = make(map[string]struct{})
	}
	if _, ok := t.overCap[k]; ok {
		return
	}
	if len(t.overCap) == maxCounted {
		t.overCapped = true
		return
	}
	t.overCap[k] = struct{}{}
}

// Notes says what the table left out, one line each, for stderr; nil
// when it left out nothing.
func (t *ParsedTable) Notes() []string {
	var out []string
	if n := len(t.overCap); n > 0 {
		more := ""
		if t.overCapped {
			more = "more than "
		}
		out = append(out, fmt.Sprintf("the table shows %d extra columns; %s%d more were left out (-j shows every column)", MaxExtraColumns, more, n))
	}
	if t.badKeys > 0 {
		out = append(out, fmt.Sprintf("%d value(s) under a name that is not [a-z0-9_-] were left out of the table (-j shows them)", t.badKeys))
	}
	return out
}

// Reset empties the table for the next block of records; the extra
// columns start afresh, and what Notes counts is kept.
func (t *ParsedTable) Reset() {
	t.cm, t.qp, t.extras, t.cmExtr = nil, nil, nil, nil
}

// extraRank orders the table's extra columns: the model's attributes
// first, then the dump's own extra columns as they were found.
func extraRank(k string) int {
	if i := slices.Index(modelExtras, k); i >= 0 {
		return i
	}
	return len(modelExtras)
}

var modelExtras = []string{"CM_IDN", "QP_TYPE", "PID", "COMM"}

// Len is the number of records added.
func (t *ParsedTable) Len() int { return len(t.cm) + len(t.qp) }

// Render writes the tables: rdma_cm IDs, then QPs after a blank line. With
// no records it writes the rdma_cm ID header alone.
func (t *ParsedTable) Render(w io.Writer) error {
	if len(t.cm) > 0 || len(t.qp) == 0 {
		tab := NewTable(append(slices.Clip(cmFixed), t.extras...)...)
		for i, row := range t.cm {
			cells := append(row, make([]string, len(t.extras))...)
			for _, kv := range t.cmExtr[i] {
				j := slices.Index(t.extras, kv.Key)
				if cells[len(row)+j] == "" {
					cells[len(row)+j] = kv.Value
				}
			}
			tab.Append(cells...)
		}
		if err := tab.Render(w); err != nil {
			return err
		}
		if len(t.qp) > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	}
	if len(t.qp) > 0 {
		tab := NewTable("SOURCE", "LINK", "LQPN", "RQPN", "TYPE", "STATE", "PDN", "PID", "COMM")
		for _, row := range t.qp {
			tab.Append(row...)
		}
		return tab.Render(w)
	}
	return nil
}

// ParsedTableSink writes records as ParsedTable does, rendered every
// TableRows records so that memory stays bounded however large the input:
// each block is aligned on its own, and note says so once (and, at Close,
// what the tables left out). row gives a record's source, line and
// resource.
type ParsedTableSink[R any] struct {
	w      io.Writer
	note   func(line string)
	row    func(R) (source string, line int, r *rdma.Resource)
	t      ParsedTable
	blocks int
}

// NewParsedTableSink writes the tables of records to w.
func NewParsedTableSink[R any](w io.Writer, note func(line string), row func(R) (string, int, *rdma.Resource)) *ParsedTableSink[R] {
	return &ParsedTableSink[R]{w: w, note: note, row: row}
}

func (s *ParsedTableSink[R]) Write(rec R) error {
	s.t.Add(s.row(rec))
	if s.t.Len() < TableRows {
		return nil
	}
	if s.blocks == 0 {
		s.note(fmt.Sprintf("more than %d records: the table is written in blocks of %d, each aligned on its own (-j or -o legacy write one line per record)", TableRows, TableRows))
	} else if _, err := io.WriteString(s.w, "\n"); err != nil {
		return err
	}
	s.blocks++
	err := s.t.Render(s.w)
	s.t.Reset()
	return err
}

// Flush has nothing to do: each block is aligned on its own, written whole.
func (s *ParsedTableSink[R]) Flush() error { return nil }

// Close writes the last block (the header alone when there were no
// records), then notes what the tables left out.
func (s *ParsedTableSink[R]) Close() error {
	var err error
	if s.blocks == 0 || s.t.Len() > 0 {
		if s.blocks > 0 {
			if _, err := io.WriteString(s.w, "\n"); err != nil {
				return err
			}
		}
		err = s.t.Render(s.w)
	}
	for _, n := range s.t.Notes() {
		s.note(n)
	}
	return err
}
