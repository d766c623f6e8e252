package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
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

// gidRun is what gid does (gid.Source.Run), in the format Out.
type gidRun struct {
	Out formats.Format
	Run gid.RunOptions
}

func runGID(c *cli.Context) error {
	o, err := gidOptions(c)
	if err != nil {
		return err
	}
	src := gid.Source{Root: "/", NetNS: gid.OurNetNS()}
	return src.Run(o.Run, formats.NewGIDView(os.Stdout, o.Out))
}

func gidOptions(c *cli.Context) (gidRun, error) {
	if err := maxArgs(c.Args().Slice(), 0); err != nil {
		return gidRun{}, err
	}
	f, err := formats.ParseFormat(c.String("output"), c.Bool("json"), formats.FormatJSON, formats.FormatTable, formats.FormatJSON, formats.FormatNDJSON)
	if err != nil {
		return gidRun{}, usagef("%w", err)
	}
	port := c.Uint("port")
	if c.IsSet("port") && (port == 0 || port > 255) {
		return gidRun{}, usagef("--port %d: a port is 1 to 255", port)
	}
	o := gidRun{Out: f, Run: gid.RunOptions{Filter: gid.Filter{Dev: c.String("dev"), Port: uint32(port)}, Watch: c.Bool("watch"), Every: c.Duration("interval")}}
	if o.Run.Watch && o.Out == formats.FormatJSON {
		o.Out = formats.FormatNDJSON // a stream: one object a line
	}
	if o.Run.Watch && o.Run.Every < 10*time.Millisecond {
		return gidRun{}, usagef("--interval %v: at least 10ms", o.Run.Every)
	}
	return o, nil
}
