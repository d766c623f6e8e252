package main

import (
	"errors"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/ports"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/host/proc"
)

func init() { commands = append(commands, smcCommand()) }

func smcCommand() *cli.Command {
	return &cli.Command{
		Name:      "smc",
		Usage:     "list SMC sockets (the kernel's TCP-compatible sockets over RDMA) with their TCP connection, process, mode, fallback reason and SMC-R link",
		ArgsUsage: " ",
		Description: "Sockets come from SMC's socket diagnostics (NETLINK_SOCK_DIAG, family AF_SMC: the\n" +
			"smc_diag module, loaded on demand as root), processes from /proc/PID/fd. An SMC\n" +
			"connection starts as TCP (its CLC socket, whose 4-tuple is shown); SMC-R then moves the\n" +
			"data to RDMA over a link group's link, or falls back to TCP and says why (the\n" +
			"SMC_CLC_DECL code, decoded). The [smc] QPs listed with a link are the smc module's QPs on\n" +
			"that device port: no kernel interface gives a link's QP numbers.\n\n" +
			"`smc linkgroup` and `smc device` are smc-tools' `smcr linkgroup link-show` and `smcr\n" +
			"device` (smc-tools is not in Debian), from SMC's generic netlink (SMC_GEN_NETLINK, Linux\n" +
			"5.11 and later).\n\n" +
			"EXAMPLES:\n" +
			"   rdmatrace smc\n" +
			"   rdmatrace smc -j\n" +
			"   rdmatrace smc linkgroup\n" +
			"   rdmatrace smc device -j\n\n" +
			"EXIT STATUS:\n" + exitStatus("an error: no SMC diagnostics (smc_diag), a reply that could not be decoded (what could be is shown)", ""),
		Flags:  listFlags(),
		Action: runSMC,
		Subcommands: []*cli.Command{
			{
				Name:    "linkgroup",
				Aliases: []string{"lgr"},
				Usage:   "list SMC-R link groups, one line per link, with the SMC sockets on each link and the [smc] QPs of its device port",
				Description: "From SMC_GEN_NETLINK's link dump (what `smcr linkgroup link-show` shows), joined\n" +
					"with smc_diag's sockets (by link id, device, port and GIDs) and RDMA netlink's QPs.\n\n" +
					"EXIT STATUS:\n" + exitStatus("an error: no SMC generic netlink (smc not loaded, or Linux before 5.11)", ""),
				ArgsUsage: " ",
				Flags:     listFlags(),
				Action:    runSMCLinkGroups,
			},
			{
				Name:      "device",
				Aliases:   []string{"dev"},
				Usage:     "list the RDMA device ports SMC-R can use, with their PNET ID, netdev, state and links",
				ArgsUsage: " ",
				Description: "From SMC_GEN_NETLINK's device dump (what `smcr device` shows). smc takes only\n" +
					"InfiniBand and RoCE devices (node type CA): iWARP devices such as siw are not listed.\n\n" +
					"EXIT STATUS:\n" + exitStatus("an error: no SMC generic netlink (smc not loaded, or Linux before 5.11)", ""),
				Flags:  listFlags(),
				Action: runSMCDevices,
			},
		},
	}
}

func runSMC(c *cli.Context) error {
	o, err := listOptions(c, "smc")
	if err != nil {
		return err
	}
	rows, err := ports.GatherSMC(enrich.New(enrich.Options{}))
	return showGathered(o, formats.SMCList.Of(rows), err, true)
}

func runSMCLinkGroups(c *cli.Context) error {
	o, err := listOptions(c, "smc linkgroup")
	if err != nil {
		return err
	}
	rows, err := ports.GatherLinkGroups(enrich.New(enrich.Options{}))
	return showGathered(o, formats.LinkGroupList.Of(rows), err, false)
}

func runSMCDevices(c *cli.Context) error {
	o, err := listOptions(c, "smc device")
	if err != nil {
		return err
	}
	rows, err := ports.GatherSMCDevices()
	return showGathered(o, formats.SMCDeviceList(ports.NetdevName).Of(rows), err, false)
}

// showGathered writes what a gathering found, then says what it could not
// read (exit status 1); when its source could not be read at all
// (ports.Unavailable), that alone, before anything is written.
func showGathered(o output, l formats.Listing, err error, pidNS bool) error {
	if u := (*ports.Unavailable)(nil); errors.As(err, &u) {
		return exitWith(1, u.Err)
	}
	if pidNS {
		proc.WarnPIDNamespace(os.Stderr)
	}
	if werr := o.write(l); werr != nil {
		return werr
	}
	return partial(err)
}
