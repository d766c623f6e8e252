package formats

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// Table collects rows and renders them as aligned, borderless columns (the
// `kubectl get` look), with every cell sanitized for the terminal.
type Table struct {
	header []string
	rows   [][]string
}

// NewTable starts a table with these column headings.
func NewTable(header ...string) *Table {
	h := make([]string, len(header))
	for i, c := range header {
		h[i] = Sanitize(c) // headings can come from input too (parse's extra columns)
	}
	return &Table{header: h}
}

// Append adds a row.
func (t *Table) Append(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		if c == "" {
			c = "-"
		}
		row[i] = Sanitize(c)
	}
	t.rows = append(t.rows, row)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table to w: each column as wide as its widest cell
// (in terminal cells), two spaces between columns, no trailing blanks.
// It writes what tablewriter's borderless table writes (renderTablewriter,
// which TestRenderIsTablewriters compares it with), in a pass over the
// cells: tablewriter took 30 µs and 250 allocations a row, and `parse`
// writes millions.
func (t *Table) Render(w io.Writer) error {
	cols := len(t.header)
	for _, row := range t.rows {
		if len(row) != cols {
			return t.renderTablewriter(w) // a ragged table: tablewriter's own layout
		}
	}
	if cols == 0 {
		return t.renderTablewriter(w)
	}
	widths := make([]int, cols)
	for i, c := range t.header {
		widths[i] = cellWidth(c)
	}
	for _, row := range t.rows {
		for i, c := range row {
			widths[i] = max(widths[i], cellWidth(c))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	writeRow := func(row []string) {
		line = line[:0]
		for i, c := range row {
			line = append(line, c...)
			if i < cols-1 {
				for range widths[i] - cellWidth(c) + 2 {
					line = append(line, ' ')
				}
			}
		}
		line = append(bytes.TrimRight(line, " "), '\n')
		bw.Write(line)
	}
	writeRow(t.header)
	for _, row := range t.rows {
		writeRow(row)
	}
	return bw.Flush()
}

// cellWidth is how many terminal cells c takes, as tablewriter counts
// them: a byte each for printable ASCII, twwidth's count otherwise.
func cellWidth(c string) int {
	for i := 0; i < len(c); i++ {
		if c[i] < 0x20 || c[i] >= 0x7f {
			return twwidth.Width(c)
		}
	}
	return len(c)
}

// renderTablewriter writes the table with tablewriter.
func (t *Table) renderTablewriter(w io.Writer) error {
	var buf bytes.Buffer
	tab := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.Off),
	)
	tab.Header(t.header)
	if err := tab.Bulk(t.rows); err != nil {
		return err
	}
	if err := tab.Render(); err != nil {
		return err
	}
	// The renderer pads every cell on both sides; drop the outer padding.
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimRight(strings.TrimPrefix(line, " "), " \n")
		if line != "" || nl {
			out.WriteString(line)
		}
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

// resourceColumns are the table columns of each type, by JSON key; "link"
// is DEV/PORT and "dev" the device name.
var resourceColumns = func() map[rdma.ResType][]string {
	names := func(ks ...*rdma.ResKey) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.Name
		}
		return out
	}
	owner := []*rdma.ResKey{&rdma.KeyPID, &rdma.KeyComm}
	with := func(first string, ks ...*rdma.ResKey) []string { return append([]string{first}, names(ks...)...) }
	return map[rdma.ResType][]string{
		rdma.ResQP: with("link", append([]*rdma.ResKey{&rdma.KeyLQPN, &rdma.KeyRQPN, &rdma.KeyType, &rdma.KeyState, &rdma.KeyPDN}, owner...)...),
		rdma.ResCMID: with("link", append(append([]*rdma.ResKey{&rdma.KeyCMIDN, &rdma.KeyLQPN, &rdma.KeyQPType, &rdma.KeyState, &rdma.KeyPS}, owner...),
			&rdma.KeySrcAddr, &rdma.KeyDstAddr)...),
		rdma.ResCQ:  with("dev", append([]*rdma.ResKey{&rdma.KeyCQN, &rdma.KeyCQE, &rdma.KeyUsers, &rdma.KeyPollCtx, &rdma.KeyCTXN}, owner...)...),
		rdma.ResMR:  with("dev", append([]*rdma.ResKey{&rdma.KeyMRN, &rdma.KeyRKey, &rdma.KeyLKey, &rdma.KeyMRLen, &rdma.KeyPDN}, owner...)...),
		rdma.ResPD:  with("dev", append([]*rdma.ResKey{&rdma.KeyPDN, &rdma.KeyLocalDMALKey, &rdma.KeyUsers, &rdma.KeyCTXN}, owner...)...),
		rdma.ResCTX: with("dev", append([]*rdma.ResKey{&rdma.KeyCTXN}, owner...)...),
		rdma.ResSRQ: with("dev", append([]*rdma.ResKey{&rdma.KeySRQN, &rdma.KeyType, &rdma.KeyLQPN, &rdma.KeyPDN, &rdma.KeyCQN}, owner...)...),
	}
}()

// ResourceTable lays out resources of one type as a table.
func ResourceTable(t rdma.ResType, rs []rdma.Resource) *Table {
	cols := resourceColumns[t]
	for i := range rs {
		if ContainerName(rs[i].Owner.Place) != "" {
			cols = append(cols[:len(cols):len(cols)], "container")
			break
		}
	}
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = strings.ToUpper(c)
	}
	tab := NewTable(head...)
	for i := range rs {
		r := &rs[i]
		o := ResourceObject(r)
		withheld, _ := o.Get("withheld")
		row := make([]string, len(cols))
		for j, c := range cols {
			switch c {
			case "link":
				row[j] = r.DevName + "/-"
				if r.Has&rdma.HasPort != 0 {
					row[j] = r.DevName + "/" + uintText(uint64(r.Port))
				}
			case "dev":
				row[j] = r.DevName
			case "container":
				row[j] = ContainerName(r.Owner.Place)
			case "comm":
				if f, ok := o.Get(c); ok && r.Owner.Kernel() {
					row[j] = "[" + f.Str + "]"
				} else if ok {
					row[j] = f.Str
				}
			default:
				if f, ok := o.Get(c); ok {
					row[j] = f.Text()
				}
				for _, k := range withheld.List {
					if k == c {
						row[j] = "withheld"
					}
				}
			}
		}
		tab.Append(row...)
	}
	return tab
}

func uintText(v uint64) string { return (&Field{Kind: Num, Num: v}).Text() }

// ContainerName is how the human views name where a process runs: the
// runtime and the container id shortened as runtimes print it
// ("docker:0123456789ab", "slurm:42.3"), or the pod ("pod:NAMESPACE/NAME",
// else "pod:<uid>") when only that is known; "" for a process outside containers.
func ContainerName(p *rdma.Placement) string {
	switch {
	case p == nil:
		return ""
	case p.ContainerID != "":
		id := p.ContainerID
		if len(id) == 64 {
			id = id[:12]
		}
		rt := p.Runtime
		if rt == "" {
			rt = "container"
		}
		return Sanitize(rt + ":" + id)
	case p.PodName != "":
		return Sanitize("pod:" + p.Pod())
	case p.PodUID != "":
		return Sanitize("pod:" + p.PodUID)
	}
	return ""
}
