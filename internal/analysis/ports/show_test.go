package ports_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/source/sockdiag"
)

// ports' use case without a command line: the rows are written first;
// without RDMA netlink a line says so after them and noRDMA is set; what
// else could not be read is problems; write's error is the error.
func TestShow(t *testing.T) {
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	in := ports.Input{IWarp: map[string]bool{},
		Sockets: []sockdiag.Socket{{Proto: "tcp", Src: netip.MustParseAddrPort("0.0.0.0:22"), Dst: netip.MustParseAddrPort("0.0.0.0:0"), State: 10}}}
	noNetlink := fmt.Errorf("%w: open RDMA netlink socket: protocol not supported", ports.ErrNoRDMA)
	dumpFailed := errors.New(`dump cm_id of "rxe0": operation not permitted`)
	for _, c := range []struct {
		name           string
		gerr, writeErr error
		noRDMA         bool
		problems       bool
	}{
		{"all read", nil, nil, false, false},
		{"no RDMA netlink", noNetlink, nil, true, false},
		{"no RDMA netlink and a failed dump", errors.Join(noNetlink, dumpFailed), nil, true, true},
		{"a failed dump", dumpFailed, nil, false, true},
		{"write fails", nil, errors.New("stdout closed"), false, false},
	} {
		log.Reset()
		var wrote int
		noRDMA, problems, err := ports.Show(func() (ports.Input, error) { return in, c.gerr }, fakeProcs{},
			func(rows []ports.Row) error { wrote = len(rows); return c.writeErr })
		if !errors.Is(err, c.writeErr) || noRDMA != c.noRDMA || (problems != nil) != c.problems || wrote != 1 {
			t.Errorf("%s: noRDMA %v, problems %v, err %v, %d rows written", c.name, noRDMA, problems, err, wrote)
		}
		if said := strings.Contains(log.String(), "rdma_cm IDs not shown"); said != c.noRDMA {
			t.Errorf("%s: slog %q", c.name, log.String())
		}
	}
}
