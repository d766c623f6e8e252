package debugfs

import (
	"bytes"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// colKind is what a legacy column holds, and so which cells fit it.
type colKind uint8

const (
	colType   colKind = iota // IB, IW, ETH
	colDevice                // a device name
	colPort                  // decimal port number, 0 = none
	colNetdev                // a net device name
	colSrc                   // address:port
	colDst                   // address:port
	colSpace                 // TCP, UDP, IPOIB, IB, SDP
	colState                 // an rdma_cm state name
	colQPN                   // decimal QP number, 0 = none
	colPID                   // decimal process id
	colComm                  // a process name
	colNumber                // a numeric extra (TOS): decimal or 0x hex, kept as text
	colExtra                 // any other named column, kept as text
)

// column is one column of a header.
type column struct {
	name     string
	kind     colKind
	optional bool   // its cell may be left out
	expected string // how an error message describes what fits
}

// Known column names. Everything else in a header is kept as a named extra.
var knownColumns = map[string]column{
	"TYPE":     {kind: colType, optional: true, expected: "TYPE (IB, IW or ETH)"},
	"DEVICE":   {kind: colDevice, expected: "DEVICE (a device name)"},
	"PORT":     {kind: colPort, expected: "PORT (a port number)"},
	"NET_DEV":  {kind: colNetdev, optional: true, expected: "NET_DEV (a net device name)"},
	"SRC_ADDR": {kind: colSrc, expected: "SRC_ADDR (ip:port or [ipv6]:port)"},
	"DST_ADDR": {kind: colDst, optional: true, expected: "DST_ADDR (ip:port or [ipv6]:port)"},
	"SPACE":    {kind: colSpace, expected: "SPACE (TCP, UDP, IPOIB, IB or SDP)"},
	"STATE":    {kind: colState, expected: "STATE (" + rdma.CMStateNames() + ")"},
	"QP_NUM":   {kind: colQPN, expected: "QP_NUM (a QP number)"},
	"PID":      {kind: colPID, optional: true, expected: "PID (a process id)"},
	"COMM":     {kind: colComm, optional: true, expected: "COMM (a process name)"},
	"TOS":      {kind: colNumber, optional: true, expected: "TOS (a number)"},
}

// maxColumns bounds a header (and so the matcher's tables).
const maxColumns = 64

// Layout is the column list of one legacy header.
type Layout struct {
	// Names are the header's column names, in order.
	Names []string
	cols  []column
	// restComm: the last column is COMM, which takes the rest of a row
	// that has more cells than columns (process names can hold spaces).
	restComm bool
}

// DefaultLayout is the 2009 header, assumed for rows before any header.
var DefaultLayout = mustLayout(rdma.LegacyColumns)

func mustLayout(names []string) *Layout {
	l, err := NewLayout(names)
	if err != nil {
		panic(err)
	}
	return l
}

// NewLayout builds a layout from column names. Unknown names become named
// extra columns; a name may appear only once.
func NewLayout(names []string) (*Layout, error) {
	if len(names) == 0 || len(names) > maxColumns {
		return nil, &layoutError{"a header of 1 to " + strconv.Itoa(maxColumns) + " columns", strconv.Itoa(len(names)) + " columns"}
	}
	l := &Layout{Names: slices.Clone(names), cols: make([]column, len(names))}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return nil, &layoutError{"each column once", "column " + n + " twice"}
		}
		l.cols[i] = columnNamed(n)
	}
	l.restComm = l.cols[len(l.cols)-1].kind == colComm
	return l, nil
}

// columnNamed is the column a header names n: a known one, or an extra
// that holds any value.
func columnNamed(n string) column {
	c, ok := knownColumns[n]
	if !ok {
		c = column{kind: colExtra, optional: true, expected: n + " (any value)"}
	}
	c.name = n
	return c
}

type layoutError struct{ expected, found string }

func (e *layoutError) Error() string { return "expected " + e.expected + ", found " + e.found }

func (l *Layout) equalNames(names [][]byte) bool {
	if len(names) != len(l.Names) {
		return false
	}
	for i, n := range names {
		if string(n) != l.Names[i] {
			return false
		}
	}
	return true
}

// isHeader reports whether the cells are a header: every cell a column
// name (upper-case letters, digits, '_', starting with a letter), naming
// DEVICE and STATE among them. Rows always hold numbers (PORT, QP_NUM) and
// so never look like this.
func isHeader(cells [][]byte) bool {
	var dev, state bool
	for _, c := range cells {
		if len(c) == 0 || c[0] < 'A' || c[0] > 'Z' {
			return false
		}
		for _, b := range c {
			if !(b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_') {
				return false
			}
		}
		dev = dev || string(c) == "DEVICE"
		state = state || string(c) == "STATE"
	}
	return dev && state
}

// Forms. A cell's form decides which columns it may fill; every test runs
// on the decoded cell, so that a value rewritten by LegacyWriter fits
// exactly the columns it fitted when it was read.

var devTypes = [...]string{"IB", "IW", "ETH"}

func parseDevType(b []byte) (string, bool) {
	for _, t := range devTypes {
		if bytes.EqualFold(b, []byte(t)) {
			return t, true
		}
	}
	return "", false
}

// legacySpaces are the SPACE names, in the spelling of the legacy layout.
var legacySpaces = [...]struct {
	name string
	ps   rdma.PortSpace
}{{"TCP", rdma.PSTCP}, {"UDP", rdma.PSUDP}, {"IPOIB", rdma.PSIPoIB}, {"IB", rdma.PSIB}, {"SDP", rdma.PSSDP}}

func parseSpace(b []byte) (rdma.PortSpace, bool) {
	for _, s := range legacySpaces {
		if bytes.EqualFold(b, []byte(s.name)) {
			return s.ps, true
		}
	}
	return 0, false
}

func parseCMState(b []byte) (rdma.CMState, bool) {
	for s := rdma.CMIdle; s <= rdma.CMDestroying; s++ {
		if bytes.EqualFold(b, []byte(s.String())) {
			return s, true
		}
	}
	return 0, false
}

// parseUint parses a decimal number of at most max, without signs or
// spaces; leading zeros are allowed.
func parseUint(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (max-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

func isNumber(b []byte) bool {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
		for _, c := range b {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// isName is the form of DEVICE and NET_DEV: Linux refuses ':' and '/' in
// net device names, and a name made only of digits would be a number.
func isName(b []byte) bool {
	if len(b) == 0 || bytes.IndexByte(b, ':') >= 0 || bytes.IndexByte(b, '/') >= 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return true
		}
	}
	return false
}

// parseEndpoint parses "a.b.c.d:port", "[v6]:port" or "[v6%zone]:port". An
// IPv6 address without brackets is accepted too: the last ':' always
// separates the port.
func parseEndpoint(b []byte) (ap netip.AddrPort, zone []byte, ok bool) {
	colon := bytes.LastIndexByte(b, ':')
	if colon <= 0 {
		return ap, nil, false
	}
	port, ok := parseUint(b[colon+1:], 0xffff)
	if !ok {
		return ap, nil, false
	}
	host := b[:colon]
	if host[0] == '[' {
		if len(host) < 3 || host[len(host)-1] != ']' {
			return ap, nil, false
		}
		host = host[1 : len(host)-1]
	} else if a, ok := parseIPv4(host); ok {
		return netip.AddrPortFrom(a, uint16(port)), nil, true
	}
	if pct := bytes.IndexByte(host, '%'); pct >= 0 {
		if pct == len(host)-1 {
			return ap, nil, false
		}
		zone = host[pct+1:]
		host = host[:pct]
	}
	if len(host) == 0 {
		return ap, nil, false
	}
	// A string view of the bytes, not a copy: ParseAddr keeps nothing of
	// its input once the zone is cut off, and its error is dropped here.
	// This saves an allocation per IPv6 address.
	a, err := netip.ParseAddr(unsafe.String(&host[0], len(host)))
	if err != nil || (zone != nil && !a.Is6()) {
		return ap, nil, false
	}
	return netip.AddrPortFrom(a, uint16(port)), zone, true
}

// parseIPv4 is netip.ParseAddr for dotted quads, without allocating: the
// hot path of a dump is full of them.
func parseIPv4(b []byte) (netip.Addr, bool) {
	var ip [4]byte
	n := 0
	for i := 0; i < 4; i++ {
		if i > 0 {
			if n >= len(b) || b[n] != '.' {
				return netip.Addr{}, false
			}
			n++
		}
		start, v := n, 0
		for n < len(b) && b[n] >= '0' && b[n] <= '9' && n-start < 3 {
			v = v*10 + int(b[n]-'0')
			n++
		}
		if n == start || v > 255 || (n-start > 1 && b[start] == '0') {
			return netip.Addr{}, false
		}
		ip[i] = byte(v)
	}
	if n != len(b) {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(ip), true
}

// fits reports whether a decoded cell has the form of column kind k.
func fits(k colKind, b []byte) bool {
	switch k {
	case colType:
		_, ok := parseDevType(b)
		return ok
	case colDevice, colNetdev:
		return isName(b)
	case colPort, colQPN, colPID:
		_, ok := parseUint(b, 0xffffffff)
		return ok
	case colSrc, colDst:
		_, _, ok := parseEndpoint(b)
		return ok
	case colSpace:
		_, ok := parseSpace(b)
		return ok
	case colState:
		_, ok := parseCMState(b)
		return ok
	case colNumber:
		return isNumber(b)
	}
	return true // COMM and unknown extras take anything
}

// matcher assigns the cells of a row to the columns of a layout. Cells of
// empty values are left out of a row, so a row can be shorter than its
// header; the matcher finds the assignment that fills columns from the
// left: at each column it prefers taking the next cell over skipping an
// optional column, and it backtracks when a choice leaves later cells
// unplaceable. Failed (column, cell) pairs are remembered, so the search
// is at most columns × cells steps.
type matcher struct {
	cols   []column
	cells  [][]byte
	assign [maxColumns]int8 // cell index per column, -1 for left out
	failed [maxColumns + 1]uint64
	// required[j]: how many columns from j on must get a cell.
	required [maxColumns + 1]uint8
}

func (m *matcher) match(cols []column, cells [][]byte) bool {
	m.cols, m.cells = cols, cells
	// Fast path: as many cells as columns and each fits its own column.
	if len(cells) == len(cols) {
		ok := true
		for j := range cols {
			if !fits(cols[j].kind, cells[j]) {
				ok = false
				break
			}
			m.assign[j] = int8(j)
		}
		if ok {
			return true
		}
	}
	if len(cells) > len(cols) {
		return false
	}
	m.required[len(cols)] = 0
	for j := len(cols) - 1; j >= 0; j-- {
		m.required[j] = m.required[j+1]
		if !cols[j].optional {
			m.required[j]++
		}
	}
	clear(m.failed[:len(cols)+1])
	return m.solve(0, 0)
}

func (m *matcher) solve(j, i int) bool {
	if j == len(m.cols) {
		return i == len(m.cells)
	}
	left := len(m.cells) - i
	if m.failed[j]&(1<<i) != 0 || left < int(m.required[j]) || left > len(m.cols)-j {
		return false
	}
	if i < len(m.cells) && fits(m.cols[j].kind, m.cells[i]) {
		m.assign[j] = int8(i)
		if m.solve(j+1, i+1) {
			return true
		}
	}
	if m.cols[j].optional {
		m.assign[j] = -1
		if m.solve(j+1, i) {
			return true
		}
	}
	m.failed[j] |= 1 << i
	return false
}

// explain says why cells do not match: it walks the columns greedily and
// reports the first cell that fits no column it could go to.
func explain(cols []column, cells [][]byte) (expected, found string) {
	i := 0
	for j := range cols {
		if i < len(cells) && fits(cols[j].kind, cells[i]) {
			i++
			continue
		}
		if cols[j].optional {
			continue
		}
		if i == len(cells) {
			return cols[j].expected, "end of line"
		}
		return cols[j].expected, lineerr.Quote(cells[i])
	}
	if i < len(cells) {
		return "end of line after " + cols[len(cols)-1].name, lineerr.Quote(cells[i])
	}
	// Greedy placement succeeded where the full search failed: cannot
	// happen, as the search tries the greedy choice first.
	return "a row of the header's columns", "a row that fits none"
}

// setCell stores a matched cell into the resource. The cell fitted the
// column's form, so its parse cannot fail.
func (rd *Reader) setCell(r *rdma.Resource, c *column, b []byte) {
	switch c.kind {
	case colType:
		r.DevType, _ = parseDevType(b)
		r.Has |= rdma.HasDevType
	case colDevice:
		r.DevName = rd.intern(b)
	case colPort:
		v, _ := parseUint(b, 0xffffffff)
		if v != 0 { // port 0 is "bound to no port"
			r.Port = uint32(v)
			r.Has |= rdma.HasPort
		}
	case colNetdev:
		r.Netdev = rd.intern(b)
		r.Has |= rdma.HasNetdev
	case colSrc:
		var zone []byte
		r.Src, zone, _ = parseEndpoint(b)
		r.SrcZone = rd.internZone(zone)
		r.Has |= rdma.HasSrcAddr
	case colDst:
		var zone []byte
		r.Dst, zone, _ = parseEndpoint(b)
		r.DstZone = rd.internZone(zone)
		r.Has |= rdma.HasDstAddr
	case colSpace:
		r.PS, _ = parseSpace(b)
		r.Has |= rdma.HasPS
	case colState:
		r.CMState, _ = parseCMState(b)
		r.Has |= rdma.HasState
	case colQPN:
		v, _ := parseUint(b, 0xffffffff)
		if v != 0 { // QP_NUM 0 is "no QP"
			r.LQPN = uint32(v)
			r.Has |= rdma.HasLQPN
		}
	case colPID:
		v, _ := parseUint(b, 0xffffffff)
		r.Owner.PID = uint32(v)
		r.Has |= rdma.HasPID
	case colComm:
		r.Owner.Comm = rd.intern(b)
	default:
		r.Extra = append(r.Extra, rdma.KV{Key: c.name, Value: rd.intern(b)})
	}
}

// appendCell appends r's cell of column c, escaped; nothing when r has no
// value there (a cell left out). It is setCell's inverse: what it writes,
// setCell reads back as it was.
func appendCell(b []byte, r *rdma.Resource, c *column) []byte {
	has := func(f rdma.Field) bool { return r.Has&f != 0 }
	switch c.kind {
	case colType:
		return appendEscaped(b, r.DevType)
	case colDevice:
		return appendEscaped(b, r.DevName)
	case colPort:
		if !has(rdma.HasPort) {
			return append(b, '0')
		}
		return strconv.AppendUint(b, uint64(r.Port), 10)
	case colNetdev:
		return appendEscaped(b, r.Netdev)
	case colSrc:
		if has(rdma.HasSrcAddr) {
			return appendEndpoint(b, r.Src, r.SrcZone)
		}
	case colDst:
		if has(rdma.HasDstAddr) {
			return appendEndpoint(b, r.Dst, r.DstZone)
		}
	case colSpace:
		if has(rdma.HasPS) {
			return append(b, spaceName(r.PS)...)
		}
	case colState:
		if has(rdma.HasState) {
			return append(b, r.CMState.String()...)
		}
	case colQPN:
		if !has(rdma.HasLQPN) {
			return append(b, '0')
		}
		return strconv.AppendUint(b, uint64(r.LQPN), 10)
	case colPID:
		if has(rdma.HasPID) {
			return strconv.AppendUint(b, uint64(r.Owner.PID), 10)
		}
	case colComm:
		if r.Owner.KernName != "" {
			// A kernel owner, bracketed as `rdma res show` prints it.
			return appendEscaped(b, "["+r.Owner.KernName+"]")
		}
		return appendEscaped(b, r.Owner.Comm)
	default:
		for _, kv := range r.Extra {
			if kv.Key == c.name {
				return appendEscaped(b, kv.Value)
			}
		}
	}
	return b
}

// spaceName names a port space as the legacy layout does ("IPOIB",
// "SDP"); a space it has no name for is written as iproute2 does, "---".
func spaceName(ps rdma.PortSpace) string {
	for _, s := range legacySpaces {
		if s.ps == ps {
			return s.name
		}
	}
	return ps.String()
}

// parseLegacyRow reads one row under layout l into rec.
func (rd *Reader) parseLegacyRow(rec *Record, l *Layout, line []byte, cells [][]byte) *lineerr.Error {
	cols := l.cols
	var comm []byte
	if l.restComm && len(cells) > len(cols) {
		// More cells than columns: COMM, last, takes the rest of the row.
		// Only when every other column has a cell of its own; otherwise
		// which cells belong to the name cannot be told.
		k := len(cols) - 1
		comm = rd.decode(line[rd.spans[k].start:rd.spans[len(cells)-1].end], true)
		cells = cells[:k]
		cols = cols[:k]
		for j := range cols {
			if !fits(cols[j].kind, cells[j]) {
				return &lineerr.Error{Expected: cols[j].expected, Found: lineerr.Quote(cells[j])}
			}
			rd.m.assign[j] = int8(j)
		}
	} else if !rd.m.match(cols, cells) {
		exp, found := explain(cols, cells)
		return &lineerr.Error{Expected: exp, Found: found}
	}
	r := &rec.Res
	*r = rdma.Resource{Type: rdma.ResCMID}
	for j := range cols {
		if i := rd.m.assign[j]; i >= 0 {
			rd.setCell(r, &cols[j], cells[i])
		}
	}
	if comm != nil {
		r.Owner.Comm = rd.intern(comm)
	}
	// A bracketed name and no PID is a kernel owner, as `rdma res` writes
	// it ("comm [rdma_cm]").
	if c := r.Owner.Comm; r.Has&rdma.HasPID == 0 && len(c) > 2 && c[0] == '[' && c[len(c)-1] == ']' {
		r.Owner.KernName, r.Owner.Comm = c[1:len(c)-1], ""
	}
	rec.Kind = KindLegacy
	rec.Layout = l
	return nil
}

// headerNames returns the column names of a header line, for messages.
func headerNames(cells [][]byte) string {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = string(c)
	}
	return strings.Join(s, " ")
}

func (rd *Reader) internZone(z []byte) string {
	if z == nil {
		return ""
	}
	return rd.intern(z)
}
