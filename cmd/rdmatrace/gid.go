package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/gid"
)

func init() {
	commands = append(commands, gidCommand())
}

// gidCommand is show_gids: every port's GID table from sysfs.
func gidCommand() *cli.Command {
	return &cli.Command{
		Name:  "gid",
		Usage: "list the ports' GID tables (like show_gids): index, GID, IPv4, RoCE version, netdev, VLAN, namespace",
		ArgsUsage: "[-d DEV] [-p PORT]\n\n" +
			"   Read from sysfs (/sys/class/infiniband/DEV/ports/PORT/gids, gid_attrs/types and\n" +
			"   gid_attrs/ndevs), the VLAN from /proc/net/vlan; empty entries are left out, as\n" +
			"   show_gids does. NETNS is our network namespace's inode when the netdev is in it,\n" +
			"   - when it is in another. A QP's source GID is an index into this table\n" +
			"   (`rdmatrace trace` shows it at the modify that sets it: event qp-attr).",
		Description: "EXAMPLES:\n" +
			"   rdmatrace gid\n" +
			"   rdmatrace gid -d rxe0 -p 1\n" +
			"   rdmatrace gid -j\n" +
			"   rdmatrace gid -w                  # then each GID added or removed, polled every second\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA device (or not the one named), an entry that could not be read (the others are shown)", ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dev", Aliases: []string{"d"}, Usage: "only the device `DEV`"},
			&cli.UintFlag{Name: "port", Aliases: []string{"p"}, Usage: "only the port `PORT`"},
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON array, one object per GID (same as -o json)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outTable, Usage: "output format: table, json, ndjson"},
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "after the table, read it again every --interval and print what was added, removed or changed (polled: a change between two reads is seen once, late by up to the interval); until Ctrl-C"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "with -w: how often the table is read"},
		},
		Action: runGID,
	}
}

func runGID(c *cli.Context) error {
	if err := maxArgs(c, 0); err != nil {
		return err
	}
	format := c.String("output")
	if c.Bool("json") {
		format = outJSON
	}
	if format != outTable && format != outJSON && format != outNDJSON {
		return usage(c, "unknown output format %q: valid formats are table, json, ndjson", format)
	}
	port := c.Uint("port")
	if c.IsSet("port") && (port == 0 || port > 255) {
		return usage(c, "--port %d: a port is 1 to 255", port)
	}
	src, f := gid.Source{Root: "/", NetNS: gid.OurNetNS()}, gid.Filter{Dev: c.String("dev"), Port: uint32(port)}
	gs, err := src.Read(f)
	objs := make([]formats.Object, len(gs))
	for i := range gs {
		objs[i] = formats.GIDObject(&gs[i])
	}
	if c.Bool("watch") && format == outJSON {
		format = outNDJSON // a stream: one object a line
	}
	if werr := writeObjects(os.Stdout, format, false, objs, nil, func() *formats.Table { return formats.GIDTable(gs) }); werr != nil {
		return werr
	}
	if err != nil {
		if !c.Bool("watch") || gs == nil {
			return exitWith(1, fmt.Errorf("gid: %s", formats.Sanitize(err.Error())))
		}
		fmt.Fprintf(os.Stderr, "rdmatrace: gid: %s\n", formats.Sanitize(err.Error()))
	}
	if !c.Bool("watch") {
		return nil
	}
	return watchGIDs(c, src, f, gs, format)
}

// watchGIDs polls the tables and prints each difference from the last read.
func watchGIDs(c *cli.Context, src gid.Source, f gid.Filter, last []rdma.GIDEntry, format string) error {
	every := c.Duration("interval")
	if every < 10*time.Millisecond {
		return usage(c, "--interval %v: at least 10ms", every)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	out := bufio.NewWriter(os.Stdout)
	for {
		select {
		case <-ctx.Done():
			return out.Flush()
		case <-tick.C:
		}
		cur, err := src.Read(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rdmatrace: gid: %s\n", formats.Sanitize(err.Error()))
			if cur == nil {
				continue // the device went away, or sysfs could not be read: try again
			}
		}
		now := time.Now()
		for _, ch := range gid.Diff(last, cur) {
			if format == outNDJSON {
				out.Write(append(formats.AppendJSON(nil, formats.GIDChangeObject(now, ch.What, &ch.Entry)), '\n'))
			} else {
				out.WriteString(formats.GIDChangeLine(now, ch.What, &ch.Entry) + "\n")
			}
		}
		if err := out.Flush(); err != nil {
			return err
		}
		last = cur
	}
}
