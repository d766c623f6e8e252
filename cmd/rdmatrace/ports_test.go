package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/source/nldev"
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
