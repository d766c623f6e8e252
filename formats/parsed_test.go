package formats

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// addCM adds an rdma_cm ID read at line of k.txt (`rdma res show cm_id`
// text), with extra key/value pairs.
func addCM(t *ParsedTable, line int, extra ...rdma.KV) {
	t.Add("k.txt", line, &rdma.Resource{
		Type: rdma.ResCMID, DevName: "rxe0", Port: 1, CMIDN: uint32(line), CMState: rdma.CMConnect, PS: rdma.PSTCP,
		Has: rdma.HasPort | rdma.HasCMIDN | rdma.HasState | rdma.HasPS, Extra: extra,
	})
}

// distinctExtras adds n records, each with an extra column of its own:
// the shape of a hostile or corrupt dump.
func distinctExtras(t *ParsedTable, n int) {
	for i := range n {
		addCM(t, i+1, rdma.KV{Key: "k" + strconv.Itoa(i), Value: "v"})
	}
}

// BenchmarkParsedTableDistinctExtras renders 2000 records that each carry
// an extra column no other record has. Memory must grow with the records,
// not with records times columns.
//
//	go test -run '^$' -bench ParsedTableDistinctExtras -benchmem -cpu 1 ./formats/
//
// Before the cap on extra columns (D7): 40.6 s/op, 5.94 GB/op, 186.7 M
// allocs/op; with it: 0.69 s/op, 88 MB/op, 1.5 M allocs/op.
func BenchmarkParsedTableDistinctExtras(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var t ParsedTable
		distinctExtras(&t, 2000)
		if err := t.Render(&bytes.Buffer{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParsedTableHeadingsCarryNoEscapes(t *testing.T) {
	var tab ParsedTable
	addCM(&tab, 1, rdma.KV{Key: "k\x1b]0;T\x07ey", Value: "v"}, rdma.KV{Key: "drv_ok", Value: "1"},
		rdma.KV{Key: "\u202eyek", Value: "w"}, rdma.KV{Key: "TOS", Value: "16"})
	var out bytes.Buffer
	if err := tab.Render(&out); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(out.String(), "\n")
	terminalSafeLines(t, "the table", out.String())
	if strings.Contains(head, "EY") || strings.Contains(head, "YEK") || !strings.Contains(head, "DRV_OK") || !strings.Contains(head, "TOS") {
		t.Errorf("headings %q: want DRV_OK and TOS, and no column for the hostile names", head)
	}
	want := []string{"2 value(s) under a name that is not [a-z0-9_-] were left out of the table (-j shows them)"}
	if got := tab.Notes(); !slices.Equal(got, want) {
		t.Errorf("Notes() = %q, want %q", got, want)
	}
}

func TestNewTableSanitizesHeadings(t *testing.T) {
	var out bytes.Buffer
	if err := NewTable("A\x1b[2J", "B\u202e").Render(&out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "A\\x1b[2J  B\\u202e\n"; got != want {
		t.Errorf("header %q, want %q", got, want)
	}
}

func TestParsedTableBoundsExtraColumns(t *testing.T) {
	var tab ParsedTable
	distinctExtras(&tab, 2000)
	// CM_IDN, and the first MaxExtraColumns of the dump's own.
	if got := len(tab.extras); got != 1+MaxExtraColumns {
		t.Errorf("%d extra columns, want %d", got, 1+MaxExtraColumns)
	}
	want := []string{"the table shows 24 extra columns; 1976 more were left out (-j shows every column)"}
	if got := tab.Notes(); !slices.Equal(got, want) {
		t.Errorf("Notes() = %q, want %q", got, want)
	}
	// The model's own columns still come after the cap is reached.
	tab.Add("k.txt", 2001, &rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0",
		Has: rdma.HasPID, Owner: rdma.Owner{PID: 7, Comm: "rping"}})
	if !slices.Contains(tab.extras, "PID") || !slices.Contains(tab.extras, "COMM") {
		t.Errorf("extras %q lack PID and COMM", tab.extras)
	}
}

func TestParsedTableMemoryIsLinearInDistinctExtras(t *testing.T) {
	alloc := func(n int) float64 {
		return testing.AllocsPerRun(1, func() {
			var tab ParsedTable
			distinctExtras(&tab, n)
			if err := tab.Render(&bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := alloc(250), alloc(1000)
	// Quadratic growth gave 16 times the allocations for 4 times the
	// records; linear gives 4.
	if large > 6*small {
		t.Errorf("%v allocations for 250 records, %v for 1000: more than linear", small, large)
	}
}

// BenchmarkParsedTableQPs renders a block (TableRows) of QPs as `rdmatrace
// parse` writes `rdma res show qp` dumps: the table's cost per record.
//
//	go test -run '^$' -bench ParsedTableQPs -benchmem -cpu 1 ./formats/
func BenchmarkParsedTableQPs(b *testing.B) {
	b.ReportAllocs()
	var out bytes.Buffer
	for b.Loop() {
		var t ParsedTable
		for i := range TableRows {
			t.Add("qp.txt", i+1, &rdma.Resource{Type: rdma.ResQP, DevName: "mlx5_0", Port: 1, LQPN: uint32(i), RQPN: uint32(i * 7),
				QPType: rdma.QPTypeRC, QPState: rdma.QPStateRTS, PDN: uint32(i % 1000), Owner: rdma.Owner{PID: uint32(1000 + i%5000), Comm: "app"},
				Has: rdma.HasPort | rdma.HasLQPN | rdma.HasRQPN | rdma.HasQPType | rdma.HasState | rdma.HasPDN | rdma.HasPID})
		}
		out.Reset()
		if err := t.Render(&out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(TableRows)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
