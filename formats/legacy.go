package formats

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// LegacyWriter writes rdma_cm IDs in the legacy debugfs layout
// (debugfs/FORMAT.md): a header line, then one row per
// ID with empty cells left out, cells separated by one space. It writes the
// header again whenever the columns change, as concatenated device files
// do, so records of several layouts can stream through one writer.
//
// Cells are escaped so that a row stays one line of blank-free cells and
// nothing reaches a terminal raw: Sanitize's escapes (\\, \xHH, \uHHHH),
// plus \x20 for a space, and a ':' in the first cell or a leading "==>"
// (which a reader would take for a grep prefix or a head/tail separator).
// The debugfs reader undoes them, which is what makes the round trip exact.
type LegacyWriter struct {
	w    *bufio.Writer
	cols []string
	buf  []byte
}

// NewLegacyWriter writes to w; call Flush at the end.
func NewLegacyWriter(w io.Writer) *LegacyWriter { return &LegacyWriter{w: bufio.NewWriter(w)} }

// Write writes r under the columns cols: rdma.LegacyColumns, optionally
// followed by extra columns. PID and COMM come from the owner; any other
// name from r.Extra. Only rdma_cm IDs can be written.
func (lw *LegacyWriter) Write(r *rdma.Resource, cols []string) error {
	if !slices.Equal(cols, lw.cols) {
		lw.cols = slices.Clone(cols)
		lw.buf = append(lw.buf[:0], strings.Join(cols, " ")...)
		lw.buf = append(lw.buf, '\n')
		if _, err := lw.w.Write(lw.buf); err != nil {
			return err
		}
	}
	lw.buf = AppendLegacyRow(lw.buf[:0], r, cols)
	lw.buf = append(lw.buf, '\n')
	_, err := lw.w.Write(lw.buf)
	return err
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

// AppendLegacyRow appends the row of r under cols, without a line end.
func AppendLegacyRow(b []byte, r *rdma.Resource, cols []string) []byte {
	start := len(b)
	for _, c := range cols {
		n := len(b)
		if n > start {
			b = append(b, ' ')
		}
		before := len(b)
		b = appendLegacyCell(b, r, c)
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

func appendLegacyCell(b []byte, r *rdma.Resource, col string) []byte {
	has := func(f rdma.Field) bool { return r.Has&f != 0 }
	switch col {
	case "TYPE":
		return appendEscaped(b, r.DevType)
	case "DEVICE":
		return appendEscaped(b, r.DevName)
	case "PORT":
		if !has(rdma.HasPort) {
			return append(b, '0')
		}
		return strconv.AppendUint(b, uint64(r.Port), 10)
	case "NET_DEV":
		return appendEscaped(b, r.Netdev)
	case "SRC_ADDR":
		if has(rdma.HasSrcAddr) {
			return appendEndpoint(b, r.Src.Addr().String(), r.SrcZone, r.Src.Port(), r.Src.Addr().Is4())
		}
	case "DST_ADDR":
		if has(rdma.HasDstAddr) {
			return appendEndpoint(b, r.Dst.Addr().String(), r.DstZone, r.Dst.Port(), r.Dst.Addr().Is4())
		}
	case "SPACE":
		if has(rdma.HasPS) {
			return append(b, legacySpace(r.PS)...)
		}
	case "STATE":
		if has(rdma.HasState) {
			return append(b, r.CMState.String()...)
		}
	case "QP_NUM":
		if !has(rdma.HasLQPN) {
			return append(b, '0')
		}
		return strconv.AppendUint(b, uint64(r.LQPN), 10)
	case "PID":
		if has(rdma.HasPID) {
			return strconv.AppendUint(b, uint64(r.Owner.PID), 10)
		}
	case "COMM":
		if r.Owner.KernName != "" {
			// A kernel owner, bracketed as `rdma res show` prints it.
			return appendEscaped(b, "["+r.Owner.KernName+"]")
		}
		return appendEscaped(b, r.Owner.Comm)
	default:
		for _, kv := range r.Extra {
			if kv.Key == col {
				return appendEscaped(b, kv.Value)
			}
		}
	}
	return b
}

// legacySpace names a port space as the legacy layout does ("IPOIB",
// "SDP"); a space it has no name for is written as iproute2 does, "---".
func legacySpace(ps rdma.PortSpace) string {
	switch ps {
	case rdma.PSIPoIB:
		return "IPOIB"
	case rdma.PSSDP:
		return "SDP"
	}
	return ps.String()
}

// appendEndpoint writes ip:port, or [ip%zone]:port for IPv6.
func appendEndpoint(b []byte, ip, zone string, port uint16, v4 bool) []byte {
	if v4 {
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
	return strconv.AppendUint(b, uint64(port), 10)
}

// appendEscaped writes a cell: Sanitize's escapes, and a space as \x20 so
// that the cell stays one.
func appendEscaped(b []byte, s string) []byte {
	s = Sanitize(s)
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			b = append(b, `\x20`...)
		} else {
			b = append(b, s[i])
		}
	}
	return b
}
