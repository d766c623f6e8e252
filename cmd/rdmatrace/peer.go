package main

import (
	"errors"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
)

func init() { commands = append(commands, peerCommand()) }

func peerCommand() *cli.Command {
	return &cli.Command{
		Name:  "peer",
		Usage: "who is on the other end: the node, device, QP and owner behind a remote GID and QPN, from the fleet's log store",
		Description: "Asks the log store the nodes send their identity records to (trace or exporter with\n" +
			"--otlp and --node): which node and device ADDR (an IP address, that is its RoCE v2 GID)\n" +
			"or GID is, and which QP held QPN there: its owner (pid, comm, container, pod), when it\n" +
			"was created, its peer, and its fate (destroyed by its owner, freed at its owner's exit\n" +
			"or death by a signal, at the removal of its device, or alive). A QPN is reused once its\n" +
			"QP is gone: with --at, the answer is the QP whose life held TIME (or, when none did, the\n" +
			"last one before it); without, the live one, else the last one; it says which.\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace peer --store http://vlogs:9428 10.0.0.2 0x11\n" +
			"   rdmatrace peer --store http://vlogs:9428 --at 2026-12-01T05:00:04.5Z ::ffff:10.0.0.2 17\n" +
			"   rdmatrace peer --store http://vlogs:9428 --at -5m fe80::5054:ff:fe12:3456 17 -j\n\n" +
			"EXIT STATUS:\n" + exitStatus("the store could not be asked, or it has no such QP (the answer says what was missing)", ""),
		ArgsUsage: "ADDR|GID QPN",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "store", EnvVars: []string{"RDMATRACE_STORE"}, Usage: "the log store's base `URL` (VictoriaLogs: http://HOST:9428; user:password@ for basic auth)"},
			&cli.StringFlag{Name: "at", Usage: "who held the QPN at `TIME`: 2026-12-01T05:00:04.5Z, 2026-12-01 05:00:04.5 (local), 05:00:04.5 (today), @UNIXSECONDS, -DURATION (before now)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up on the store after `DURATION`"},
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "one JSON object"},
		},
		Action: runPeer,
	}
}

func runPeer(c *cli.Context) error {
	o, err := peerOptions(c)
	if err != nil {
		return err
	}
	return askPeer(o)
}

// peerRun is what peer asks, where, and how it answers.
type peerRun struct {
	Ask    peer.AskOptions
	Format formats.Format
}

// peerOptions reads ADDR|GID QPN, --at, --store, --timeout and -j.
func peerOptions(c *cli.Context) (o peerRun, err error) {
	if c.Args().Len() != 2 {
		return o, usagef("expected ADDR|GID QPN (two arguments), got %d", c.Args().Len())
	}
	addr, err := peer.ParseAddr(c.Args().Get(0))
	if err != nil {
		return o, usagef("%w", err)
	}
	qpn, err := peer.ParseQPN(c.Args().Get(1))
	if err != nil {
		return o, usagef("%w", err)
	}
	o.Ask.Query = peer.Query{Addr: addr, QPN: qpn}
	if at := c.String("at"); at != "" {
		if o.Ask.Query.At, err = peer.ParseTime(at, time.Now()); err != nil {
			return o, usagef("%w", err)
		}
	}
	if o.Ask.Store = c.String("store"); o.Ask.Store == "" {
		return o, usagef("--store URL: the log store's base URL is needed (http://HOST:9428), or RDMATRACE_STORE")
	}
	o.Ask.Timeout, o.Format = c.Duration("timeout"), formats.FormatText
	if c.Bool("json") {
		o.Format = formats.FormatJSON
	}
	return o, nil
}

// askPeer is peer.Ask, its answer written; exit status 1 when the store
// has no such QP.
func askPeer(o peerRun) error {
	found, err := peer.Ask(o.Ask, func(a peer.Answer) error { return formats.WritePeer(os.Stdout, a, o.Format, time.Now()) })
	if ue := (*peer.StoreURLError)(nil); errors.As(err, &ue) {
		return usagef("%w", ue.Err)
	}
	if err != nil {
		return exitWith(1, err)
	}
	if !found {
		return exitWith(1, nil)
	}
	return nil
}
