package formats

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// --netns: one JSON array whose objects name their namespace, and a
// section per namespace in the human views (an empty one left out).
func TestNetnsListingsGolden(t *testing.T) {
	devsIn := map[string][]rdma.Device{
		"self":     {{Index: 1, Name: "rxe0", NodeType: rdma.NodeType(1)}},
		"blue":     {{Index: 2, Name: "rxe1\x1b[31m", NodeType: rdma.NodeType(1)}},
		"pid 4000": nil,
	}
	names := []string{"self", "blue", "pid 4000"}
	var ls []Listing
	for _, n := range names {
		ls = append(ls, DeviceList(false).Of(devsIn[n]))
	}
	var out bytes.Buffer
	for _, format := range []Format{FormatTable, FormatText, FormatJSON, FormatNDJSON} {
		out.WriteString("--- " + string(format) + "\n")
		if err := WriteSections(&out, format, false, names, ls); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, filepath.Join("..", "testdata", "cli", "netns-listings.txt"), out.Bytes())
	if bytes.Contains(out.Bytes(), []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
}

// -d's tables (res qp -d, dev -d): a column for every key of -j, in the
// order keys first appear; a key an object lacks is "-". Before, -d left
// the table as it was.
func TestDetailsTableGolden(t *testing.T) {
	qps := []rdma.Resource{
		{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: 1, QPType: rdma.QPTypeGSI, QPState: rdma.QPStateRTS, SQPSN: 38,
			Has: rdma.HasPort | rdma.HasLQPN | rdma.HasQPType | rdma.HasState | rdma.HasSQPSN, Owner: rdma.Owner{KernName: "ib_core"}},
		{Type: rdma.ResQP, DevIndex: 1, DevName: "rxe0", Port: 1, LQPN: 17, RQPN: 18, QPType: rdma.QPTypeRC, QPState: rdma.QPStateRTS,
			RQPSN: 12095070, SQPSN: 2795781, PDN: 25,
			Has:   rdma.HasPort | rdma.HasLQPN | rdma.HasRQPN | rdma.HasQPType | rdma.HasState | rdma.HasRQPSN | rdma.HasSQPSN | rdma.HasPathMig | rdma.HasPDN | rdma.HasPID,
			Owner: rdma.Owner{PID: 6433, Comm: "rping\x1b[31m"}},
	}
	on := true
	devs := []rdma.Device{
		{Index: 0, Name: "rxe0", Ports: 1, NodeType: 1, NodeGUID: 0x505400fffe123456, SysImageGUID: 0x505400fffe123456, Protocol: "roce", DIM: &on,
			CapFlags: 1<<1 | 1<<2 | 1<<21},
		{Index: 1, Name: "siw0", Ports: 1, NodeType: 4, Protocol: "iw"},
	}
	var out bytes.Buffer
	var objs []Object
	for i := range qps {
		objs = append(objs, ResourceObject(&qps[i]))
	}
	if err := ObjectTable(objs).Render(&out); err != nil {
		t.Fatal(err)
	}
	objs = nil
	for i := range devs {
		objs = append(objs, DeviceObject(&devs[i], true))
	}
	out.WriteString("\n")
	if err := ObjectTable(objs).Render(&out); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	if err := ObjectTable(nil).Render(&out); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "testdata", "cli", "details-table.txt"), out.Bytes())
}

// trace's sink: a recording's error says -w, and Close ends the screen's
// view before the closers run, in order.
func TestEventTeeSaysWhichOutputFailed(t *testing.T) {
	var order []string
	var screen bytes.Buffer
	tee := &EventTee{Print: NewEventSink(&screen, FormatJSON, EventView{Stamp: StampNone}), Record: failing{},
		Closers: []func() error{func() error { order = append(order, "otlp"); return nil }, func() error { order = append(order, "recording"); return nil }}}
	if err := tee.Write(&rdma.Event{Kind: rdma.EvCreate}); err == nil || !strings.HasPrefix(err.Error(), "-w: ") {
		t.Errorf("Write = %v, want the recording's error under -w", err)
	}
	if err := tee.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(screen.String(), "]\n") || strings.Join(order, ",") != "otlp,recording" {
		t.Errorf("screen %q, closers %v", screen.String(), order)
	}
}

type failing struct{}

func (failing) Write(*rdma.Event) error { return errors.New("disk full") }
func (failing) Flush() error            { return nil }
func (failing) Close() error            { return nil }

// parse's table sink renders a block every TableRows records, says so
// once, and its notes at the end.
func TestParsedTableSinkWritesBlocks(t *testing.T) {
	var out bytes.Buffer
	var notes []string
	s := NewParsedTableSink(&out, func(n string) { notes = append(notes, n) },
		func(r *rdma.Resource) (string, int, *rdma.Resource) { return "dump", 1, r })
	r := &rdma.Resource{Type: rdma.ResCMID, DevName: "rxe0"}
	for range TableRows + 1 {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "written in blocks") {
		t.Errorf("notes %q, want the blocks said first", notes)
	}
	if n := strings.Count(out.String(), "\n\n"); n != 1 {
		t.Errorf("%d blank lines between blocks, want 1", n)
	}
}
