package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

func init() {
	commands = append(commands, systemCommand())
}

// systemCommand is `rdma system`: the netns mode (and copy-on-fork,
// privileged Q_Key) shown, and the netns mode set.
func systemCommand() *cli.Command {
	return &cli.Command{
		Name:  "system",
		Usage: "show or set the RDMA subsystem's netns mode (like `rdma system`)",
		ArgsUsage: "[show] | set netns shared|exclusive\n\n" +
			"   shared: every network namespace sees every RDMA device (the default).\n" +
			"   exclusive: a device is seen only in its own namespace (`rdma dev set DEV netns NS`\n" +
			"   moves it); dev, link and res then warn about devices they cannot see, and\n" +
			"   --netns all lists them. The kernel refuses to switch while other namespaces exist.",
		Description: "EXAMPLES:\n" +
			"   rdmatrace system\n" +
			"   rdmatrace -j system show\n" +
			"   rdmatrace system set netns exclusive\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no RDMA netlink, no permission (set needs CAP_NET_ADMIN), the kernel refused", ""),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Aliases: []string{"j"}, Usage: "JSON with iproute2's keys (same as -o json)"},
			&cli.BoolFlag{Name: "pretty", Aliases: []string{"p"}, Usage: "indent the JSON, as rdma -p -j does"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outText, Usage: "output format: text, json"},
		},
		Action: runSystem,
	}
}

func runSystem(c *cli.Context) error {
	o, mode, err := systemOptions(c)
	if err != nil {
		return err
	}
	cl, err := dial("")
	if err != nil {
		return err
	}
	defer cl.Close()
	if mode != "" {
		if err := cl.SetNetNSMode(mode); err != nil {
			return exitWith(1, err)
		}
		return nil
	}
	sys, err := cl.System()
	if err != nil {
		return exitWith(1, err)
	}
	if o.Format == formats.FormatJSON {
		return o.write(formats.List[rdma.System]{Object: formats.SystemObject}.Of([]rdma.System{sys}))
	}
	_, err = fmt.Fprint(os.Stdout, formats.SystemText(&sys))
	return err
}

// systemOptions read `[show]` or `set netns MODE` (mode: "" to show).
func systemOptions(c *cli.Context) (o output, mode string, err error) {
	args := dropShow(c.Args().Slice())
	set := len(args) > 0 && args[0] == "set"
	switch {
	case set && (len(args) != 3 || args[1] != "netns"):
		return o, "", usagef("want: system set netns shared|exclusive")
	case set && args[2] != "shared" && args[2] != "exclusive":
		return o, "", usagef("netns mode %q: valid modes are shared, exclusive", args[2])
	case !set && len(args) > 0 && args[0] != "netns":
		return o, "", usagef("unexpected argument %q", args[0])
	case set:
		mode = args[2]
	}
	f, err := formats.ParseFormat(c.String("output"), c.Bool("json"), formats.FormatJSON, formats.FormatText, formats.FormatJSON)
	if err != nil {
		return o, "", usagef("%w", err)
	}
	return output{Format: f, Pretty: c.Bool("pretty")}, mode, nil
}
