package debugfs

import (
	"bufio"
	"bytes"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// LegacyWriter writes rdma_cm IDs in the legacy debugfs layout
// (FORMAT.md): a header line, then one row per ID with empty cells left
// out, cells separated by one space. It writes the header again whenever
// the columns change, as concatenated device files do, so records of
// several layouts can stream through one writer.
//
// It is the Reader's inverse, as encoding/csv's Writer is its Reader's: each
// cell is written by the column table the Reader parses with (appendCell
// beside setCell), and escaped so that a row stays one line of blank-free
// cells and nothing reaches a terminal raw: termsafe's escapes (\\, \xHH,
// \uHHHH), plus \x20 for a space, and a ':' in the first cell or a leading
// "==>" (which the Reader would take for a grep prefix or a head/tail
// separator). The Reader undoes them, which is what makes the round trip
// exact.
type LegacyWriter struct {
	w     *bufio.Writer
	names []string
	cols  []column
	buf   []byte
}

// NewLegacyWriter writes to w; call Flush at the end.
func NewLegacyWriter(w io.Writer) *LegacyWriter { return &LegacyWriter{w: bufio.NewWriter(w)} }

// Write writes r under the columns cols: a Layout's Names, such as
// rdma.LegacyColumns optionally followed by extra columns. PID and COMM
// come from the owner; a name the layout does not know from r.Extra. Only
// rdma_cm IDs can be written.
func (lw *LegacyWriter) Write(r *rdma.Resource, cols []string) error {
	if !slices.Equal(cols, lw.names) {
		lw.setColumns(cols)
		lw.buf = append(lw.buf[:0], strings.Join(cols, " ")...)
		lw.buf = append(lw.buf, '\n')
		if _, err := lw.w.Write(lw.buf); err != nil {
			return err
		}
	}
	lw.buf = appendRow(lw.buf[:0], r, lw.cols)
	lw.buf = append(lw.buf, '\n')
	_, err := lw.w.Write(lw.buf)
	return err
}

func (lw *LegacyWriter) setColumns(names []string) {
	lw.names = slices.Clone(names)
	lw.cols = lw.cols[:0]
	for _, n := range names {
		lw.cols = append(lw.cols, columnNamed(n))
	}
}

// Flush writes out buffered rows.
func (lw *LegacyWriter) Flush() error { return lw.w.Flush() }

// WriteLegacy writes rdma_cm IDs (other resources are skipped) under one
// header of rdma.LegacyColumns plus extraCols, e.g. "PID", "COMM": the
// "rdmastat" of the 2009 discussion. With no IDs it writes the header
// alone, as an empty debugfs file would.
func WriteLegacy(w io.Writer, resources []rdma.Resource, extraCols []string) error {
	cols := append(slices.Clip(rdma.LegacyColumns), extraCols...)
	lw := NewLegacyWriter(w)
	wrote := false
	for i := range resources {
		if resources[i].Type != rdma.ResCMID {
			continue
		}
		if err := lw.Write(&resources[i], cols); err != nil {
			return err
		}
		wrote = true
	}
	if !wrote {
		if _, err := lw.w.WriteString(strings.Join(cols, " ") + "\n"); err != nil {
			return err
		}
	}
	return lw.Flush()
}

func appendRow(b []byte, r *rdma.Resource, cols []column) []byte {
	start := len(b)
	for i := range cols {
		n := len(b)
		if n > start {
			b = append(b, ' ')
		}
		before := len(b)
		b = appendCell(b, r, &cols[i])
		if len(b) == before { // empty cell: left out, with its blank
			b = b[:n]
		}
	}
	return guardFirstCell(b, start)
}

// guardFirstCell escapes what would make a reader take the row for a
// wrapping: a ':' before the first blank reads as a grep "path:" prefix,
// and "==>" at the start as a head/tail separator. The reader decodes the
// escapes back, so the cells are unchanged.
func guardFirstCell(b []byte, start int) []byte {
	row := b[start:]
	end := bytes.IndexByte(row, ' ')
	if end < 0 {
		end = len(row)
	}
	colon := bytes.IndexByte(row[:end], ':') >= 0
	arrow := bytes.HasPrefix(row, []byte("==>"))
	if !colon && !arrow {
		return b
	}
	guarded := make([]byte, 0, len(row)+8)
	for i, c := range row {
		switch {
		case i == 0 && arrow:
			guarded = append(guarded, `\x3d`...)
		case i < end && c == ':':
			guarded = append(guarded, `\x3a`...)
		default:
			guarded = append(guarded, c)
		}
	}
	return append(b[:start], guarded...)
}

// appendEndpoint writes ip:port, or [ip%zone]:port for IPv6.
func appendEndpoint(b []byte, ap netip.AddrPort, zone string) []byte {
	ip := ap.Addr().String()
	if ap.Addr().Is4() {
		b = append(b, ip...)
	} else {
		b = append(b, '[')
		b = append(b, ip...)
		if zone != "" {
			b = append(b, '%')
			b = appendEscaped(b, zone)
		}
		b = append(b, ']')
	}
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(ap.Port()), 10)
}

// appendEscaped writes a cell: termsafe's escapes, and a space as \x20 so
// that the cell stays one.
func appendEscaped(b []byte, s string) []byte {
	s = termsafe.Sanitize(s)
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			b = append(b, `\x20`...)
		} else {
			b = append(b, s[i])
		}
	}
	return b
}
