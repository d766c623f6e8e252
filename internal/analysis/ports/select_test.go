package ports

import (
	"net/netip"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// What ss's -t, -u and -l select among sockets and rdma_cm IDs.
func TestSelectReadsSsFlagsForRDMA(t *testing.T) {
	rows := map[string]Row{
		"tcp-listen":   {Proto: "tcp", Stack: StackTCP, State: "LISTEN"},
		"tcp-estab":    {Proto: "tcp", Stack: StackTCP, State: "ESTAB"},
		"udp-unconn":   {Proto: "udp", Stack: StackUDP, State: "UNCONN"},
		"udp-estab":    {Proto: "udp", Stack: StackUDP, State: "ESTAB"},
		"iwarp-listen": {Proto: "tcp", Stack: StackIWarp, State: "LISTEN", CM: true, PS: rdma.PSTCP},
		"roce-listen":  {Proto: "tcp", Stack: StackRDMACM, State: "LISTEN", CM: true, PS: rdma.PSTCP},
		"roce-conn":    {Proto: "tcp", Stack: StackRDMACM, State: "CONNECT", CM: true, PS: rdma.PSTCP},
		"ud-listen":    {Proto: "udp", Stack: StackRDMACM, State: "LISTEN", CM: true, PS: rdma.PSUDP},
		"ib-listen":    {Proto: "ib", Stack: StackRDMACM, State: "LISTEN", CM: true, PS: rdma.PSIB},
	}
	for _, tc := range []struct {
		flags string
		sel   Select
		want  []string
	}{
		{"", Select{}, []string{"tcp-listen", "tcp-estab", "udp-unconn", "udp-estab", "iwarp-listen", "roce-listen", "roce-conn", "ud-listen", "ib-listen"}},
		{"-t", Select{TCP: true}, []string{"tcp-listen", "tcp-estab", "iwarp-listen", "roce-listen", "roce-conn"}},
		{"-u", Select{UDP: true}, []string{"udp-unconn", "udp-estab", "ud-listen"}},
		{"-tu", Select{TCP: true, UDP: true}, []string{"tcp-listen", "tcp-estab", "udp-unconn", "udp-estab", "iwarp-listen", "roce-listen", "roce-conn", "ud-listen"}},
		{"-l", Select{Listening: true}, []string{"tcp-listen", "udp-unconn", "iwarp-listen", "roce-listen", "ud-listen", "ib-listen"}},
		{"-tl", Select{TCP: true, Listening: true}, []string{"tcp-listen", "iwarp-listen", "roce-listen"}},
		{"-ul", Select{UDP: true, Listening: true}, []string{"udp-unconn", "ud-listen"}},
	} {
		got := map[string]bool{}
		for name, r := range rows {
			if tc.sel.Match(&r) {
				got[name] = true
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.flags, got, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("%s: got %v, want %v", tc.flags, got, tc.want)
				break
			}
		}
	}
}

// ports' query without a command line: the rows of one port, and the
// conflicts either side of which is the process asked for.
func TestQueryKeepsRowsAndConflictsEitherSide(t *testing.T) {
	ap := func(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
	rows := []Row{
		{Stack: StackIWarp, Proto: "tcp", State: "LISTEN", Src: ap("10.0.0.1:7174"), PID: 10, Dev: "siw0", CM: true, PS: rdma.PSTCP},
		{Stack: StackTCP, Proto: "tcp", State: "LISTEN", Src: ap("0.0.0.0:7174"), PID: 20},
		{Stack: StackTCP, Proto: "tcp", State: "ESTAB", Src: ap("10.0.0.1:22"), Dst: ap("10.0.0.2:5000"), PID: 30},
	}
	if got := (Query{Port: 7174}).Rows(rows); len(got) != 2 {
		t.Errorf("port 7174: %d rows, want 2", len(got))
	}
	if got := (Query{Select: Select{Listening: true}, Addr: netip.MustParseAddr("10.0.0.1")}).Rows(rows); len(got) != 1 || got[0].PID != 10 {
		t.Errorf("listening on 10.0.0.1: %+v", got)
	}
	if got := (Query{Dev: "siw0"}).Rows(rows); len(got) != 1 {
		t.Errorf("dev siw0: %+v", got)
	}
	if got := (Query{PID: 20}).Conflicts(rows); len(got) != 1 || got[0].RDMA.PID != 10 {
		t.Errorf("pid 20's conflicts: %+v, want the one with pid 10's rdma_cm ID", got)
	}
	if got := (Query{PID: 30}).Conflicts(rows); len(got) != 0 {
		t.Errorf("pid 30 is in no conflict, got %+v", got)
	}
}
