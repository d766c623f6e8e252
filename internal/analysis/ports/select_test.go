package ports

import (
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
