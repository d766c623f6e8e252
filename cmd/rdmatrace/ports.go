package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func init() { commands = append(commands, portsCommand()) }

func portsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ports",
		Usage:     "list every TCP and UDP port in use with its process, next to rdma_cm's ports: iWARP's kernel sockets named by the process whose rdma_cm ID they carry (an ss that sees RDMA)",
		ArgsUsage: " ",
		Description: "Sockets come from the socket diagnostics (NETLINK_SOCK_DIAG), rdma_cm IDs from RDMA\n" +
			"netlink, processes from /proc/PID/fd. An iWARP device's listens and connections are\n" +
			"host TCP sockets that no process holds (ss shows them with no owner): a socket whose\n" +
			"4-tuple is a TCP-port-space rdma_cm ID's on an iWARP device is shown as stack iwarp with\n" +
			"that ID's process. rdma_cm IDs on RoCE and InfiniBand take ports of rdma_cm's own port\n" +
			"spaces, not the host's: they are stack rdma_cm, marked \"not a host port\".\n\n" +
			"--conflicts lists each port that an rdma_cm ID and a process's TCP socket both hold\n" +
			"now: on iWARP the second to bind gets EADDRINUSE; on RoCE it is shown as no conflict.\n" +
			"Conflicts as they happen (the EADDRINUSE itself) are in `rdmatrace trace`.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace ports\n" +
			"   rdmatrace ports --port 7174 -j\n" +
			"   rdmatrace ports --conflicts\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: sockets or rdma_cm IDs could not be read (what could be is shown)", ""),
		Flags: listFlags(
			&cli.UintFlag{Name: "port", Usage: "only rows whose local or remote `PORT` is this"},
			&cli.StringFlag{Name: "addr", Usage: "only rows whose local or remote address is `IP`"},
			&cli.UintFlag{Name: "pid", Usage: "only the rows of process `PID`"},
			&cli.StringFlag{Name: "dev", Usage: "only rdma_cm rows on RDMA device `NAME`"},
			&cli.BoolFlag{Name: "conflicts", Usage: "list ports that rdma_cm and a process's TCP socket both hold"},
		),
		Action: runPorts,
	}
}

func runPorts(c *cli.Context) error {
	format, err := listFormat(c, "ports")
	if err != nil {
		return err
	}
	var addr netip.Addr
	if a := c.String("addr"); a != "" {
		if addr, err = netip.ParseAddr(a); err != nil {
			return usage(c, "--addr %q: want an IPv4 or IPv6 address", a)
		}
	}
	if c.Uint("port") > 65535 {
		return usage(c, "--port %d: want 1-65535", c.Uint("port"))
	}
	in, gerr := gatherPorts()
	rows := ports.Join(in, enrich.New(enrich.Options{}))
	match := func(r *ports.Row) bool {
		if p := uint16(c.Uint("port")); p != 0 && r.Src.Port() != p && r.Dst.Port() != p {
			return false
		}
		if addr.IsValid() && r.Src.Addr() != addr.Unmap() && r.Dst.Addr() != addr.Unmap() {
			return false
		}
		if pid := uint32(c.Uint("pid")); pid != 0 && r.PID != pid {
			return false
		}
		d := c.String("dev")
		return d == "" || r.Dev == d
	}
	proc.WarnPIDNamespace(os.Stderr)
	if c.Bool("conflicts") {
		// Found among all rows, then filtered: --pid names one side of
		// a conflict, and the other side is what the user is after.
		var cs []ports.Conflict
		for _, x := range ports.Conflicts(rows) {
			if match(&x.RDMA) || match(&x.Host) {
				cs = append(cs, x)
			}
		}
		objs := make([]formats.Object, len(cs))
		for i := range cs {
			objs[i] = formats.ConflictObject(&cs[i])
		}
		err = writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.ConflictTable(cs) })
	} else {
		keep := rows[:0]
		for i := range rows {
			if match(&rows[i]) {
				keep = append(keep, rows[i])
			}
		}
		rows = keep
		objs := make([]formats.Object, len(rows))
		for i := range rows {
			objs[i] = formats.HolderObject(&rows[i])
		}
		err = writeObjects(os.Stdout, format, c.Bool("pretty"), objs, nil, func() *formats.Table { return formats.HolderTable(rows) })
	}
	if err != nil {
		return err
	}
	if errors.Is(gerr, ports.ErrNoRDMA) {
		// The sockets are shown; without RDMA netlink, say so in a line
		// (its cause is the kernel's, not worth a second one) and exit 1
		// as the help says: the rdma_cm IDs could not be read.
		fmt.Fprintf(os.Stderr, "rdmatrace: ports: %s\n", formats.Sanitize(ports.ErrNoRDMA.Error()))
		var rest []error
		for _, e := range formats.Unjoin(gerr) {
			if !errors.Is(e, ports.ErrNoRDMA) {
				rest = append(rest, e)
			}
		}
		if gerr = errors.Join(rest...); gerr == nil {
			return exitWith(1, nil)
		}
	}
	return partial(gerr)
}

// gatherPorts is ports.Gather; tests replace it.
var gatherPorts = ports.Gather

// portHolders names who holds the port that e's bind, rdma_listen or
// rdma_connect could not have, as it is now (a moment after the failure):
// "python3[300] tcp LISTEN 0.0.0.0:7400". The failing rdma_cm ID itself
// (bound, in rdma_cm's space) is left out. Empty, not nil, when no one
// holds it any more.
func portHolders(e *rdma.Event) []string {
	out := []string{}
	if !e.Src.IsValid() || e.Src.Port() == 0 {
		return out
	}
	port := e.Src.Port()
	onPort := func(all ports.Input) ports.Input {
		in := ports.Input{IWarp: all.IWarp, SMC: all.SMC}
		for _, s := range all.Sockets {
			if s.Src.Port() == port {
				in.Sockets = append(in.Sockets, s)
			}
		}
		for _, r := range all.CMIDs {
			if r.Src.Port() == port && !(e.Has(rdma.EvHasRes) && r.DevName == e.DevName && r.CMIDN == e.ID) {
				in.CMIDs = append(in.CMIDs, r)
			}
		}
		return in
	}
	in := onPort(holderInputs.get(false))
	if len(in.Sockets)+len(in.CMIDs) == 0 { // a holder newer than the dump?
		in = onPort(holderInputs.get(true))
	}
	for _, h := range ports.Holders(ports.Join(in, enrich.New(enrich.Options{})), "tcp", e.Src) {
		who := ports.Owner(&h)
		if who == "" {
			who = "?"
		}
		out = append(out, who+" "+h.Stack+" "+h.State+" "+h.Src.String())
	}
	return out
}

// holderInputs is what portHolders looks holders up in: a dump of every
// socket and rdma_cm ID. A program that loops on a failing bind would
// otherwise cost a full sock_diag and RDMA netlink dump per failure: a
// dump that has a holder of the port is used again for a second, and a
// new dump is made at most every 100 ms even when none has one.
var holderInputs = &dumpCache{reuse: time.Second, least: 100 * time.Millisecond, gather: ports.Gather, now: time.Now}

// dumpCache keeps the last ports.Gather. Its result is shared: callers
// must not change it.
type dumpCache struct {
	reuse  time.Duration // a dump that answers is used again this long
	least  time.Duration // between two dumps, whatever they answer
	gather func() (ports.Input, error)
	now    func() time.Time

	mu    sync.Mutex
	at    time.Time
	in    ports.Input
	dumps int // how many it made (for tests)
}

// get returns the last dump if it is younger than least, or younger than
// reuse when the caller does not need a fresher one; else a new dump.
func (c *dumpCache) get(fresher bool) ports.Input {
	c.mu.Lock()
	defer c.mu.Unlock()
	age := c.now().Sub(c.at)
	if c.dumps > 0 && age >= 0 && (age < c.least || !fresher && age < c.reuse) {
		return c.in
	}
	c.in, _ = c.gather() // what could be read; a holder not found is shown as none
	c.at = c.now()
	c.dumps++
	return c.in
}
