package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// ports shows the sockets it could read and exits 1 when the rdma_cm IDs
// could not be read, RDMA netlink missing included, as its help says.
func TestPortsExitsOneWhenRDMACMIDsCannotBeRead(t *testing.T) {
	defer func(g func() (ports.Input, error)) { gatherPorts = g }(gatherPorts)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"no RDMA netlink", fmt.Errorf("%w: open RDMA netlink socket: protocol not supported", ports.ErrNoRDMA)},
		{"the dump failed", errors.New("dump cm_id of \"rxe0\": operation not permitted")},
	} {
		t.Run(c.name, func(t *testing.T) {
			gatherPorts = func() (ports.Input, error) { return ports.Input{IWarp: map[string]bool{}}, c.err }
			if _, _, code := runCLI(t, "", "ports", "-j"); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
		})
	}
}

// On a kernel without RDMA netlink (this host), ports shows the sockets,
// says in a line that rdma_cm IDs are not shown, and exits 1.
func TestPortsWithoutRDMAShowsSocketsAndFails(t *testing.T) {
	if c, err := nldev.Dial(); err == nil {
		c.Close()
		t.Skip("this machine's kernel has RDMA netlink; the guest tests cover it")
	}
	stdout, stderr, code := rdmatrace(t, "ports", "-j")
	if code != 1 || !strings.HasPrefix(stdout, "[") || stderr != "rdmatrace: ports: "+ports.ErrNoRDMA.Error()+"\n" {
		t.Errorf("ports -j: exit %d, stdout %.40q, stderr %q; want 1, the sockets, and one line saying rdma_cm IDs are not shown", code, stdout, stderr)
	}
}

// stdoutOf runs f with os.Stdout going to a pipe, and returns what it got.
func stdoutOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	return <-done
}

// ss's options, bundled as ss users type them, select among sockets and
// rdma_cm IDs (failed before: unknown flag -tln).
func TestPortsTakesSsFlags(t *testing.T) {
	defer func(g func() (ports.Input, error)) { gatherPorts = g }(gatherPorts)
	ap := netip.MustParseAddrPort
	gatherPorts = func() (ports.Input, error) {
		return ports.Input{
			Sockets: []sockdiag.Socket{
				{Proto: "tcp", Src: ap("0.0.0.0:22"), Dst: ap("0.0.0.0:0"), State: 10},
				{Proto: "tcp", Src: ap("10.0.0.1:22"), Dst: ap("10.0.0.2:5000"), State: 1},
				{Proto: "udp", Src: ap("0.0.0.0:4791"), Dst: ap("0.0.0.0:0"), State: 7},
			},
			CMIDs: []rdma.Resource{
				{Type: rdma.ResCMID, DevName: "rxe0", PS: rdma.PSTCP, CMState: rdma.CMListen, Src: ap("0.0.0.0:7174"), Dst: ap("0.0.0.0:0"), Owner: rdma.Owner{PID: 1, Comm: "rping"}},
				{Type: rdma.ResCMID, DevName: "rxe0", PS: rdma.PSTCP, CMState: rdma.CMConnect, Src: ap("10.0.0.1:40000"), Dst: ap("10.0.0.2:7174"), Owner: rdma.Owner{PID: 1, Comm: "rping"}},
				{Type: rdma.ResCMID, DevName: "rxe0", PS: rdma.PSUDP, CMState: rdma.CMListen, Src: ap("0.0.0.0:7471"), Dst: ap("0.0.0.0:0"), Owner: rdma.Owner{PID: 2, Comm: "udaddy"}},
			},
			IWarp: map[string]bool{},
		}, nil
	}
	for _, tc := range []struct {
		args string
		want []string // local ports, in order
	}{
		{"", []string{"22", "22", "7174", "40000", "4791", "7471"}},
		{"-tln", []string{"22", "7174"}},
		{"-tlnp", []string{"22", "7174"}},
		{"-t -l -n -p", []string{"22", "7174"}},
		{"-uln", []string{"4791", "7471"}},
		{"-ta", []string{"22", "22", "7174", "40000"}},
		{"-l", []string{"22", "7174", "4791", "7471"}},
		{"-tu", []string{"22", "22", "7174", "40000", "4791", "7471"}},
	} {
		var code int
		out := stdoutOf(t, func() {
			_, _, code = runCLI(t, "", append([]string{"ports", "-o", "ndjson"}, strings.Fields(tc.args)...)...)
		})
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if _, rest, ok := strings.Cut(line, `"src-addr":"`); ok {
				addr, _, _ := strings.Cut(rest, `"`)
				got = append(got, addr[strings.LastIndexByte(addr, ':')+1:])
			}
		}
		if code != 0 || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("ports %s: exit %d, local ports %v, want %v\n%s", tc.args, code, got, tc.want, out)
		}
	}
}
