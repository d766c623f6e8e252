package main

import (
	"net/netip"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
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
			"ss's options, bundled as ss takes them (-tln, -tlnp):\n" +
			"   -t  TCP rows: host TCP sockets, iWARP's, and rdma_cm IDs of the TCP port space\n" +
			"       (RDMA_PS_TCP, what rping and most programs use, on RoCE and InfiniBand too)\n" +
			"   -u  UDP rows: host UDP sockets and rdma_cm IDs of the UDP port space (RDMA_PS_UDP);\n" +
			"       with neither -t nor -u, every row, the IB and IPoIB port spaces' too\n" +
			"   -l  listening rows only: LISTEN and UNCONN sockets, rdma_cm IDs in LISTEN\n" +
			"   -a  listening and non-listening rows: what ports shows anyway (ss shows\n" +
			"       non-listening ones only unless told -l or -a)\n" +
			"   -n  numeric: accepted, ports never resolves names or services\n" +
			"   -p  processes: ports always shows them; -p also indents -j's JSON\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace ports\n" +
			"   rdmatrace ports -tlnp                  # who listens on TCP ports, rdma_cm's too\n" +
			"   rdmatrace ports --port 7174 -j\n" +
			"   rdmatrace ports --conflicts\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: sockets or rdma_cm IDs could not be read (what could be is shown)", ""),
		// -tln as ss takes it; every short flag of ports is a bool but -o.
		UseShortOptionHandling: true,
		Flags: listFlagsNoPretty(
			&cli.BoolFlag{Name: "pretty", Aliases: []string{"p"}, Usage: "indent the JSON, as rdma -p -j does; as ss -p, accepted: processes are always shown"},
			&cli.BoolFlag{Name: "tcp", Aliases: []string{"t"}, Usage: "only TCP rows: host sockets, iWARP's and rdma_cm IDs of the TCP port space (ss -t)"},
			&cli.BoolFlag{Name: "udp", Aliases: []string{"u"}, Usage: "only UDP rows: host sockets and rdma_cm IDs of the UDP port space (ss -u)"},
			&cli.BoolFlag{Name: "listening", Aliases: []string{"l"}, Usage: "only listening rows: LISTEN and UNCONN sockets, rdma_cm IDs in LISTEN (ss -l)"},
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "listening and non-listening rows, which ports shows anyway (ss -a)"},
			&cli.BoolFlag{Name: "numeric", Aliases: []string{"n"}, Usage: "accepted as in ss: ports never resolves names"},
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
	o, q, conflicts, err := portsOptions(c)
	if err != nil {
		return err
	}
	noRDMA, problems, err := ports.Show(gatherPorts, enrich.New(enrich.Options{}), func(rows []ports.Row) error {
		if conflicts {
			return o.write(formats.ConflictList.Of(q.Conflicts(rows)))
		}
		return o.write(formats.HolderList.Of(q.Rows(rows)))
	})
	if err != nil || noRDMA && problems == nil {
		return exitWith(1, err) // noRDMA: the rdma_cm IDs could not be read
	}
	return partial(problems)
}

// portsOptions are ss's choices of rows, --port, --addr, --pid, --dev and
// --conflicts.
func portsOptions(c *cli.Context) (o output, q ports.Query, conflicts bool, err error) {
	if o, err = listOptions(c, "ports"); err != nil {
		return
	}
	if a := c.String("addr"); a != "" {
		if q.Addr, err = netip.ParseAddr(a); err != nil {
			return o, q, false, usagef("--addr %q: want an IPv4 or IPv6 address", a)
		}
	}
	if c.Uint("port") > 65535 {
		return o, q, false, usagef("--port %d: want 1-65535", c.Uint("port"))
	}
	if c.Bool("all") && c.Bool("listening") {
		// ss takes the last one; here neither is silently dropped.
		return o, q, false, usagef("-a (every row) and -l (listening rows only) exclude each other")
	}
	q.Select = ports.Select{TCP: c.Bool("tcp"), UDP: c.Bool("udp"), Listening: c.Bool("listening")}
	q.Port, q.PID, q.Dev = uint16(c.Uint("port")), uint32(c.Uint("pid")), c.String("dev")
	return o, q, c.Bool("conflicts"), nil
}

// gatherPorts is ports.Gather; tests replace it.
var gatherPorts = ports.Gather
