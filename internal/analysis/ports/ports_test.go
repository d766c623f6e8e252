package ports_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

type fakeProcs struct{ owners map[uint64]uint32 }

func (f fakeProcs) SocketOwners(inodes map[uint64]bool) map[uint64]uint32 {
	out := map[uint64]uint32{}
	for ino := range inodes {
		if pid, ok := f.owners[ino]; ok {
			out[ino] = pid
		}
	}
	return out
}

func (fakeProcs) Comm(pid uint32) string {
	return map[uint32]string{172: "rping", 175: "rping", 300: "python3", 301: "sshd\x1b[31m", 400: "rping"}[pid]
}

func (fakeProcs) TGID(tid uint32) uint32 {
	if tid == 176 { // a thread of rping 175
		return 175
	}
	return tid
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func sock(proto string, src, dst string, st sockdiag.State, ino uint64) sockdiag.Socket {
	return sockdiag.Socket{Proto: proto, Src: ap(src), Dst: ap(dst), State: st, Inode: ino}
}

func cmid(dev string, idn uint32, st rdma.CMState, pid uint32, src, dst string) rdma.Resource {
	return rdma.Resource{Type: rdma.ResCMID, DevName: dev, Port: 1, CMIDN: idn, CMState: st, PS: rdma.PSTCP,
		Src: ap(src), Dst: ap(dst), Owner: rdma.Owner{PID: pid, TID: pid}}
}

const (
	estab    sockdiag.State = 1
	timeWait sockdiag.State = 6
	listen   sockdiag.State = 10
)

// The guest's picture (notes B2, B3): rping over siw0 on port 7300, whose
// three kernel TCP sockets ss shows with no process; a TCP listener of
// python3 on 7400 and a siw cm_id bound to 7400 that has no socket yet; an
// rping on rxe0 next to a TCP listener on 7420 (no conflict on RoCE); a
// TIME-WAIT left by an earlier run; sshd (with an escape in its name) on 22.
func input() ports.Input {
	cmListen, cmConnect, cmBound := cmState("LISTEN"), cmState("CONNECT"), cmState("ADDR_BOUND")
	return ports.Input{
		IWarp: map[string]bool{"siw0": true},
		Sockets: []sockdiag.Socket{
			sock("tcp", "10.99.0.1:7300", "0.0.0.0:0", listen, 6881),
			sock("tcp", "10.99.0.1:7300", "10.99.0.1:51215", estab, 6887),
			sock("tcp", "10.99.0.1:51215", "10.99.0.1:7300", estab, 6886),
			sock("tcp", "0.0.0.0:7400", "0.0.0.0:0", listen, 7001),
			sock("tcp", "10.99.0.1:7420", "0.0.0.0:0", listen, 7002),
			sock("tcp", "0.0.0.0:22", "0.0.0.0:0", listen, 50),
			sock("tcp", "10.99.0.1:7300", "10.99.0.1:51000", timeWait, 0),
			sock("udp", "0.0.0.0:4791", "0.0.0.0:0", 7, 0),                // rxe's kernel UDP socket
			sock("tcp", "10.99.0.1:40000", "10.99.0.1:7500", estab, 9100), // an SMC socket's CLC socket
		},
		SMC: []sockdiag.SMCSocket{{Src: ap("10.99.0.1:40000"), Dst: ap("10.99.0.1:7500"), State: 1, Mode: 1, Inode: 9001}},
		CMIDs: []rdma.Resource{
			cmid("siw0", 0, cmListen, 172, "10.99.0.1:7300", "0.0.0.0:0"),
			cmid("siw0", 1, cmConnect, 176, "10.99.0.1:51215", "10.99.0.1:7300"),
			cmid("siw0", 2, cmConnect, 172, "10.99.0.1:7300", "10.99.0.1:51215"),
			cmid("siw0", 3, cmBound, 400, "10.99.0.1:7400", "0.0.0.0:0"),
			cmid("rxe0", 0, cmListen, 172, "10.99.0.1:7420", "0.0.0.0:0"),
		},
	}
}

func cmState(s string) rdma.CMState {
	st, err := rdma.ParseCMState(s)
	if err != nil {
		panic(err)
	}
	return st
}

var procs = fakeProcs{owners: map[uint64]uint32{7001: 300, 7002: 300, 50: 301, 9001: 300}}

func render(t *testing.T, rows []ports.Row, cs []ports.Conflict) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := formats.HolderTable(rows).Render(&out); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	for i := range rows {
		out.Write(formats.AppendJSON(nil, formats.HolderObject(&rows[i])))
		out.WriteString("\n")
	}
	out.WriteString("\n")
	if err := formats.ConflictTable(cs).Render(&out); err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		out.Write(formats.AppendJSON(nil, formats.ConflictObject(&cs[i])))
		out.WriteString("\n")
	}
	return out.Bytes()
}

// siw's three ownerless sockets become rping's iWARP rows; the bound siw
// ID with no socket is an iWARP row of its own; the RoCE ID is marked as
// no host port; sockets keep their processes; nothing is listed twice.
func TestJoinGolden(t *testing.T) {
	rows := ports.Join(input(), procs)
	cs := ports.Conflicts(rows)
	out := render(t, rows, cs)
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "ports", "join.golden"), out)
	if bytes.Contains(out, []byte{0x1b}) {
		t.Error("a raw ESC reached the output")
	}
	iw := 0
	for _, r := range rows {
		if r.Stack == ports.StackIWarp && r.Inode != 0 {
			iw++
			if r.Comm != "rping" || (r.PID != 172 && r.PID != 175) {
				t.Errorf("iWARP socket %v -> %v, want rping's", r.Src, ports.Owner(&r))
			}
		}
	}
	if iw != 3 {
		t.Errorf("%d iWARP sockets named, want siw's 3", iw)
	}
	if len(rows) != 11 {
		t.Errorf("%d rows, want 9 sockets + 2 IDs without a socket", len(rows))
	}
	for _, r := range rows {
		if r.Src.Port() == 40000 && (r.Stack != ports.StackSMC || r.PID != 300) {
			t.Errorf("the SMC socket's CLC socket: %+v, want stack smc, python3's", r)
		}
	}
}

// The conflicts: the bound siw ID against python3's wildcard listener
// (real), rxe's listener against python3's on 7420 (not real); never
// siw's listener against its own socket, nor anything against TIME-WAIT.
func TestConflicts(t *testing.T) {
	cs := ports.Conflicts(ports.Join(input(), procs))
	if len(cs) != 2 {
		t.Fatalf("%d conflicts, want 2: %+v", len(cs), cs)
	}
	for _, c := range cs {
		switch c.RDMA.Src.Port() {
		case 7400:
			if !c.Real || c.Host.Comm != "python3" || c.RDMA.Comm != "rping" {
				t.Errorf("7400: %+v", c)
			}
		case 7420:
			if c.Real {
				t.Errorf("7420 on RoCE called a conflict: %+v", c)
			}
		default:
			t.Errorf("unexpected conflict %+v", c)
		}
	}
}

// What a bind or listen that got EADDRINUSE ran into.
func TestHolders(t *testing.T) {
	rows := ports.Join(input(), procs)
	for _, tc := range []struct {
		addr string
		want []string
	}{
		{"10.99.0.1:7300", []string{"rping[172]", "rping[172]"}}, // siw's listener and the server's end, not the TIME-WAIT
		{"0.0.0.0:7300", []string{"rping[172]", "rping[172]"}},
		{"10.99.0.2:7400", []string{"python3[300]"}},
		{"10.99.0.1:9", nil},
	} {
		var got []string
		for _, h := range ports.Holders(rows, "tcp", ap(tc.addr)) {
			got = append(got, ports.Owner(&h))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ports.Holders(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
