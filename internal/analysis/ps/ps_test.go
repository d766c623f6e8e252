package ps_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ps"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

type fakeProcs struct{}

func (fakeProcs) Comm(pid uint32) string {
	return map[uint32]string{812: "rping", 900: "ib_write_bw\x1b[31m"}[pid]
}
func (fakeProcs) TGID(tid uint32) uint32               { return map[uint32]uint32{813: 812}[tid] }
func (fakeProcs) Place(uint32, uint64) *rdma.Placement { return nil }
func (fakeProcs) RDMAFiles(pid uint32, _ string) []string {
	if pid == 812 {
		return []string{"/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0 (rxe0)"}
	}
	return nil
}

// render is the table, then each row as NDJSON.
func render(t *testing.T, rows []ps.Row) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	if err := formats.ProcessTable(rows).Render(&out); err != nil {
		t.Fatal(err)
	}
	nd := formats.NewNDJSONWriter(&out)
	for i := range rows {
		if err := nd.Write(formats.ProcessObject(&rows[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Flush(); err != nil {
		t.Fatal(err)
	}
	return &out
}

func res(t rdma.ResType, dev string, pid uint32, module string) rdma.Resource {
	return rdma.Resource{Type: t, DevName: dev, Owner: rdma.Owner{PID: pid, TID: pid, KernName: module}}
}

// One row per process (threads folded into their process) and per kernel
// module, with its counts, devices and files; control characters of a
// name never reach the terminal.
func TestRowsGolden(t *testing.T) {
	rs := []rdma.Resource{
		res(rdma.ResQP, "rxe0", 0, "ib_core"), res(rdma.ResCQ, "rxe0", 0, "ib_core"), res(rdma.ResPD, "rxe1", 0, "ib_core"),
		res(rdma.ResCTX, "rxe0", 812, ""), res(rdma.ResPD, "rxe0", 812, ""), res(rdma.ResCQ, "rxe0", 813, ""),
		res(rdma.ResQP, "rxe0", 813, ""), res(rdma.ResCMID, "rxe0", 812, ""), res(rdma.ResCMID, "rxe0", 812, ""),
		res(rdma.ResMR, "rxe0", 900, ""), res(rdma.ResCMID, "", 0, "rdma_cm"),
	}
	rows := ps.Rows(rs, fakeProcs{}, "", rdma.ResSRQ) // as on Linux 5.10
	out := render(t, rows)
	path := filepath.Join("..", "..", "..", "testdata", "ps", "rows.golden")
	golden.Check(t, path, out.Bytes())
	if bytes.Contains(out.Bytes(), []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
}

// A process in a container gets a CONTAINER column in the table and the
// place keys in JSON; a host process next to it has an empty cell.
func TestRowsInAContainerGolden(t *testing.T) {
	rows := ps.Rows([]rdma.Resource{res(rdma.ResCTX, "rxe0", 812, ""), res(rdma.ResMR, "rxe0", 900, "")}, fakeProcs{}, "")
	for i := range rows {
		if rows[i].PID == 900 {
			rows[i].Place = &rdma.Placement{
				Cgroup:      "/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container",
				Runtime:     "podman",
				ContainerID: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NSPid: 2, NetNS: 4026532400,
			}
		}
	}
	out := render(t, rows)
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "ps", "container.golden"), out.Bytes())
}
